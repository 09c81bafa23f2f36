//! `oxla flags`: prints every flag oxla accepts (in `OXLA_FLAGS`, as PJRT client create
//! options, or per compile through JAX's `compiler_options`) with its type, default and help.

/// Prints the flag table.
pub fn run() {
    print!(
        "Flags are set in {env} (\"--name=value ...\"), as PJRT client create options, or per \
         compile via jax `compiler_options` (names may carry the prefix \"{prefix}\").\n\n{table}",
        env = oxla_client::FLAGS_ENV,
        prefix = oxla_client::flags::FLAG_PREFIX,
        table = oxla_client::flags::describe_flags()
    );
}
