//! A loaded program: its compiled procedures and the current values of its globals.

use crate::artifact::{Artifact, FunctionInfo, GlobalInfo, Metadata};
use crate::error::{Result, RuntimeError};
use oxla_client::{
    Buffer, Client, ClientOptions, CompileOptions, Device, ExecuteOptions, LoadedExecutable,
};
use oxla_ir::{Literal, TensorType};
use std::path::Path;

/// The value a global holds.
#[derive(Clone, Debug)]
enum GlobalValue {
    /// Still the artifact's initial value, not yet copied out of the file.
    Initial,
    /// A value a procedure stored (or the initial value once first used).
    Value(Buffer),
    /// No value: the global is not initialized by the artifact and nothing stored it yet.
    Unset,
}

/// A program loaded from an artifact, ready to call. Calls take `&mut self`: one runs at a
/// time, and each sees the globals the previous one stored.
pub struct Module {
    artifact: Artifact,
    client: Client,
    device: Device,
    executables: Vec<LoadedExecutable>,
    globals: Vec<GlobalValue>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("name", &self.metadata().name)
            .field(
                "functions",
                &self
                    .functions()
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Module {
    /// Loads the artifact at `path` and compiles every procedure, with the client options
    /// from `OXLA_FLAGS` and `OXLA_NUM_DEVICES`.
    pub fn load(path: impl AsRef<Path>) -> Result<Module> {
        Module::from_artifact(Artifact::open(path)?)
    }

    /// Compiles every procedure of a checked artifact.
    pub fn from_artifact(artifact: Artifact) -> Result<Module> {
        let options = ClientOptions::from_env()?;
        let client = Client::new(&options)?;
        let device = client
            .addressable_devices()
            .first()
            .cloned()
            .ok_or_else(|| RuntimeError::FailedPrecondition("the client has no device".into()))?;
        let mut executables = Vec::with_capacity(artifact.metadata().functions.len());
        for function in &artifact.metadata().functions {
            let options = CompileOptions {
                entry: Some(function.name.clone()),
                ..CompileOptions::default()
            };
            let exe = client.compile(artifact.module_bytes(), options)?;
            check_signature(function, &artifact.metadata().globals, &exe)?;
            executables.push(exe);
        }
        let globals = artifact
            .metadata()
            .globals
            .iter()
            .map(|g| match g.data {
                Some(_) => GlobalValue::Initial,
                None => GlobalValue::Unset,
            })
            .collect();
        Ok(Module {
            artifact,
            client,
            device,
            executables,
            globals,
        })
    }

    /// The artifact's metadata.
    pub fn metadata(&self) -> &Metadata {
        self.artifact.metadata()
    }

    /// The procedures.
    pub fn functions(&self) -> &[FunctionInfo] {
        &self.metadata().functions
    }

    /// The globals.
    pub fn globals(&self) -> &[GlobalInfo] {
        &self.metadata().globals
    }

    /// The procedure called `name`.
    pub fn function(&self, name: &str) -> Result<&FunctionInfo> {
        self.function_index(name)
            .map(|idx| &self.metadata().functions[idx])
    }

    fn function_index(&self, name: &str) -> Result<usize> {
        self.functions()
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| {
                let names: Vec<_> = self.functions().iter().map(|f| f.name.as_str()).collect();
                RuntimeError::NotFound(format!(
                    "program {} has no procedure `{name}` (it has: {})",
                    self.metadata().name,
                    names.join(", ")
                ))
            })
    }

    fn global_index(&self, name: &str) -> Result<usize> {
        self.globals()
            .iter()
            .position(|g| g.value.name == name)
            .ok_or_else(|| {
                RuntimeError::NotFound(format!(
                    "program {} has no global `{name}`",
                    self.metadata().name
                ))
            })
    }

    /// The current value of global `name`.
    pub fn global(&mut self, name: &str) -> Result<Literal> {
        let idx = self.global_index(name)?;
        Ok(self.global_buffer(idx)?.to_literal()?)
    }

    /// Replaces the value of global `name` (its type must match).
    pub fn set_global(&mut self, name: &str, value: Literal) -> Result<()> {
        let idx = self.global_index(name)?;
        let info = &self.globals()[idx];
        check_type(&info.value.ty, &value.ty, &format!("global `{name}`"))?;
        self.globals[idx] = GlobalValue::Value(Buffer::from_literal(&self.device, value)?);
        Ok(())
    }

    fn global_buffer(&mut self, idx: usize) -> Result<Buffer> {
        match &self.globals[idx] {
            GlobalValue::Value(buffer) => Ok(buffer.clone()),
            GlobalValue::Unset => Err(RuntimeError::FailedPrecondition(format!(
                "global `{}` has no value yet: the artifact does not initialize it and no \
                 procedure has stored it",
                self.globals()[idx].value.name
            ))),
            GlobalValue::Initial => {
                let info = &self.artifact.metadata().globals[idx];
                let bytes = self.artifact.initial_value(idx).ok_or_else(|| {
                    RuntimeError::Artifact(format!("global `{}` lost its data", info.value.name))
                })?;
                let buffer =
                    Buffer::from_bytes(&self.device, info.value.ty.clone(), bytes.to_vec())?;
                self.globals[idx] = GlobalValue::Value(buffer.clone());
                Ok(buffer)
            }
        }
    }

    /// Calls procedure `name` with `inputs` (in signature order) and returns its outputs.
    /// Globals it stores are updated for later calls.
    pub fn call(&mut self, name: &str, inputs: &[Literal]) -> Result<Vec<Literal>> {
        let idx = self.function_index(name)?;
        let function = &self.artifact.metadata().functions[idx];
        if inputs.len() != function.inputs.len() {
            return Err(RuntimeError::InvalidArgument(format!(
                "procedure `{name}` takes {} input(s) ({}), got {}",
                function.inputs.len(),
                describe(&function.inputs),
                inputs.len()
            )));
        }
        for (input, info) in inputs.iter().zip(&function.inputs) {
            check_type(
                &info.ty,
                &input.ty,
                &format!("input `{}` of `{name}`", info.name),
            )?;
        }
        let globals_in = function.globals_in.clone();
        let globals_out = function.globals_out.clone();
        let mut args = Vec::with_capacity(globals_in.len() + inputs.len());
        for g in globals_in {
            args.push(self.global_buffer(g)?);
        }
        for input in inputs {
            args.push(Buffer::from_literal(&self.device, input.clone())?);
        }
        let exe = &self.executables[idx];
        let result = exe.execute(&[args], &ExecuteOptions::default())?;
        for event in &result.completions {
            event.wait()?;
        }
        let mut outputs = result.outputs.into_iter().next().unwrap_or_default();
        if outputs.len() < globals_out.len() {
            return Err(RuntimeError::Artifact(format!(
                "procedure `{name}` returned {} values, fewer than the {} globals it stores",
                outputs.len(),
                globals_out.len()
            )));
        }
        let returned = outputs.split_off(globals_out.len());
        for (g, buffer) in globals_out.into_iter().zip(outputs) {
            self.globals[g] = GlobalValue::Value(buffer);
        }
        returned
            .iter()
            .map(|buffer| Ok(buffer.to_literal()?))
            .collect()
    }

    /// The client the procedures run on.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

fn describe(values: &[crate::ValueInfo]) -> String {
    values
        .iter()
        .map(|v| format!("{}: {}", v.name, v.ty))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_type(expected: &TensorType, got: &TensorType, what: &str) -> Result<()> {
    if expected != got {
        return Err(RuntimeError::InvalidArgument(format!(
            "{what} must be {expected}, got {got}"
        )));
    }
    Ok(())
}

/// Checks that the compiled function's signature is what the metadata promises.
fn check_signature(
    function: &FunctionInfo,
    globals: &[GlobalInfo],
    exe: &LoadedExecutable,
) -> Result<()> {
    let exe = exe.executable();
    let expected_in: Vec<&TensorType> = function
        .globals_in
        .iter()
        .map(|&g| &globals[g].value.ty)
        .chain(function.inputs.iter().map(|v| &v.ty))
        .collect();
    let expected_out: Vec<&TensorType> = function
        .globals_out
        .iter()
        .map(|&g| &globals[g].value.ty)
        .chain(function.outputs.iter().map(|v| &v.ty))
        .collect();
    let got_in: Vec<&TensorType> = exe.input_types().iter().collect();
    let got_out: Vec<&TensorType> = exe.output_types().iter().collect();
    if expected_in != got_in || expected_out != got_out {
        let show = |tys: &[&TensorType]| {
            tys.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(RuntimeError::Artifact(format!(
            "procedure `{}`: the metadata promises ({}) -> ({}), the module's function is \
             ({}) -> ({})",
            function.name,
            show(&expected_in),
            show(&expected_out),
            show(&got_in),
            show(&got_out)
        )));
    }
    Ok(())
}
