//! Flags through the C ABI: string and int client create options, per-compile overrides in
//! `env_option_overrides` (as JAX's `compiler_options` send them), and crash reproducers.

mod common;

use common::*;
use pjrt_sys::protos::xla::option_override_proto::Value;
use pjrt_sys::protos::xla::{
    CompileOptionsProto, ExecutableBuildOptionsProto, OptionOverrideProto,
};
use pjrt_sys::*;
use prost::Message;
use std::path::PathBuf;

const INFEED: &str = "module @jit_feed {
  func.func public @main(%t: !stablehlo.token) -> tensor<2xf32> {
    %0:2 = \"stablehlo.infeed\"(%t) {infeed_config = \"\"} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    return %0#0 : tensor<2xf32>
  }
}
";

const ADD: &str = "module @jit_add {
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
";

fn string_option(name: &'static str, value: &'static str) -> PJRT_NamedValue {
    let mut option = PJRT_NamedValue::new();
    option.name = name.as_ptr().cast();
    option.name_size = name.len();
    option.type_ = PJRT_NamedValue_Type_PJRT_NamedValue_kString;
    option.__bindgen_anon_1.string_value = value.as_ptr().cast();
    option.value_size = value.len();
    option
}

fn options_with(overrides: &[(&str, Value)]) -> Vec<u8> {
    CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto {
            num_replicas: 1,
            num_partitions: 1,
            ..Default::default()
        }),
        env_option_overrides: overrides
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    OptionOverrideProto {
                        value: Some(v.clone()),
                    },
                )
            })
            .collect(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxla-pjrt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn client_create_options_set_flags() {
    let dir = scratch("create");
    let dump_dir: &'static str = Box::leak(dir.display().to_string().into_boxed_str());
    let client = try_client(&[
        string_option("dump_dir", dump_dir),
        int64_option("oxla_opt_level", 1),
    ])
    .unwrap();
    let exe = client.compile(ADD);
    assert!(!exe.is_null());
    let compiles: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(compiles.len(), 1);
    let compile_dir = compiles.into_iter().next().unwrap().unwrap().path();
    let options = std::fs::read_to_string(compile_dir.join("options.txt")).unwrap();
    assert!(options.contains("opt_level: 1"), "{options}");

    for bad in [
        string_option("opt_level", "fast"),
        string_option("dump_directory", "x"),
    ] {
        let err = try_client(&[bad]).err().unwrap();
        assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT);
        assert!(
            err.message.contains("crash_reproducer_dir"),
            "{}",
            err.message
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compile_overrides_write_a_reproducer_and_bad_keys_are_rejected() {
    let dir = scratch("overrides");
    let client = client();
    let err = client
        .try_compile(
            INFEED,
            &options_with(&[(
                "oxla_crash_reproducer_dir",
                Value::StringField(dir.display().to_string()),
            )]),
        )
        .err()
        .unwrap();
    assert_eq!(err.code, PJRT_Error_Code_PJRT_Error_Code_UNIMPLEMENTED);
    assert!(err.message.contains("stablehlo.infeed"), "{}", err.message);
    let repros: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(repros.len(), 1);
    let repro = repros.into_iter().next().unwrap().unwrap().path();
    assert!(
        err.message.contains(&repro.display().to_string()),
        "{}",
        err.message
    );
    let bytes = std::fs::read(&repro).unwrap();
    let parsed = oxla_client::Reproducer::parse(&bytes).unwrap();
    assert_eq!(parsed.program, INFEED.as_bytes());

    let ok = client.try_compile(
        ADD,
        &options_with(&[
            ("verify_each_pass", Value::BoolField(true)),
            ("opt_level", Value::IntField(3)),
            // XLA's own options are accepted and ignored.
            ("xla_cpu_enable_fast_math", Value::BoolField(true)),
        ]),
    );
    assert!(ok.is_ok());
    for bad in [
        ("bogus_flag", Value::BoolField(true)),
        ("opt_level", Value::DoubleField(1.5)),
        ("num_threads", Value::IntField(2)),
    ] {
        let err = client
            .try_compile(ADD, &options_with(std::slice::from_ref(&bad)))
            .err()
            .unwrap();
        assert_eq!(
            err.code, PJRT_Error_Code_PJRT_Error_Code_INVALID_ARGUMENT,
            "{bad:?}"
        );
        assert!(err.message.contains("dump_dir"), "{}", err.message);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
