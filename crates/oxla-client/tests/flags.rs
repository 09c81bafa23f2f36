//! Each flag takes effect through the public client API: thread count, dumps, verification,
//! traces, per-compile overrides, and errors that list the valid flags.

use oxla_client::{
    Client, ClientOptions, CompileOptions, ErrorCode, ExecuteOptions, FlagValue, TensorType,
};
use std::path::{Path, PathBuf};

const ADD: &str = "module @jit_add {
  func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxla-flags-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn client_flags_take_effect() {
    let dir = scratch("client");
    let trace_path = dir.join("trace.json");
    let dump_dir = dir.join("dumps");
    let mut options = ClientOptions::default();
    options
        .apply_flag_text(
            &format!(
                "--num_threads=3 --oxla_opt_level=1 --verify_each_pass --trace_path={} --dump_dir={}",
                trace_path.display(),
                dump_dir.display()
            ),
            "test",
        )
        .unwrap();
    let client = Client::new(&options).unwrap();
    assert_eq!(client.num_threads(), 3);
    assert_eq!(client.flags().opt_level, 1);

    let exe = client
        .compile(ADD.as_bytes(), CompileOptions::default())
        .unwrap();
    let device = &client.devices()[0];
    let ty = TensorType::new([2], oxla_client::ElementType::F32);
    let (a, a_ready) = client
        .buffer_from_producer(device, ty.clone(), || Ok(f32_bytes(&[1.0, 2.0])))
        .unwrap();
    let (b, _) = client
        .buffer_from_producer(device, ty, || Ok(f32_bytes(&[3.0, 4.0])))
        .unwrap();
    a_ready.wait().unwrap();
    let result = exe
        .execute(&[vec![a, b]], &ExecuteOptions::default())
        .unwrap();
    result.completions[0].wait().unwrap();
    let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = out.clone();
    result.outputs[0][0]
        .to_host_async(move |bytes| {
            sink.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        })
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(*out.lock().unwrap(), f32_bytes(&[4.0, 6.0]));
    drop(result);
    drop(exe);
    drop(client);

    // Dumps: one folder named after the module, with the verify-after-each-pass phase.
    let compiles = entries(&dump_dir);
    assert_eq!(compiles.len(), 1, "{compiles:?}");
    let compile_dir = &compiles[0];
    assert!(compile_dir
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("jit_add-"));
    let options_txt = std::fs::read_to_string(compile_dir.join("options.txt")).unwrap();
    assert!(options_txt.contains("opt_level: 1"), "{options_txt}");
    let timings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(compile_dir.join("timings.json")).unwrap()).unwrap();
    let phases: Vec<&str> = timings["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        [
            "read",
            "verify",
            "lower",
            "check",
            "inline",
            "fold",
            "dead",
            "divisions",
            "verify-plan"
        ]
    );

    // Trace: written when the client went away, with compile, execute and transfer events.
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&trace_path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let named = |cat: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        named("compile"),
        [
            "read",
            "verify",
            "lower",
            "check",
            "inline",
            "fold",
            "dead",
            "divisions",
            "verify-plan"
        ]
    );
    assert_eq!(named("execute"), ["execute jit_add on device 0"]);
    let transfers = named("transfer");
    assert_eq!(
        transfers
            .iter()
            .filter(|n| n.starts_with("host_to_device"))
            .count(),
        2,
        "{transfers:?}"
    );
    assert_eq!(
        transfers
            .iter()
            .filter(|n| n.starts_with("device_to_host"))
            .count(),
        1,
        "{transfers:?}"
    );
    for event in events.iter().filter(|e| e["ph"] == "X") {
        assert!(event["ts"].is_number() && event["dur"].is_number());
        assert!(event["pid"].is_number() && event["tid"].is_number());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn per_compile_overrides_and_bad_flags() {
    let dir = scratch("overrides");
    let client = Client::new(&ClientOptions::default()).unwrap();
    let mut options = CompileOptions::default();
    options
        .flags
        .push("oxla_dump_dir", FlagValue::Str(dir.display().to_string()));
    options.flags.push("opt_level", FlagValue::Int(0));
    client.compile(ADD.as_bytes(), options).unwrap();
    let compiles = entries(&dir);
    assert_eq!(compiles.len(), 1, "{compiles:?}");
    let options_txt = std::fs::read_to_string(compiles[0].join("options.txt")).unwrap();
    assert!(options_txt.contains("opt_level: 0"), "{options_txt}");
    assert!(
        options_txt.contains("per_compile_overrides: oxla_dump_dir="),
        "{options_txt}"
    );

    for (name, value) in [
        ("bogus", FlagValue::Int(1)),
        ("num_threads", FlagValue::Int(2)),
        ("opt_level", FlagValue::Int(7)),
        ("verify_each_pass", FlagValue::Str("sometimes".to_string())),
    ] {
        let mut options = CompileOptions::default();
        options.flags.push(name, value);
        let err = client.compile(ADD.as_bytes(), options).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        assert!(err.message().contains("opt_level"), "{err}");
        assert!(err.message().contains("dump_dir"), "{err}");
    }

    let mut bad = ClientOptions::default();
    let err = bad
        .apply_flag_text("--opt_level=1 --dump-dir=x", "OXLA_FLAGS")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.message().contains("\"dump-dir\""), "{err}");
    assert!(err.message().contains("crash_reproducer_dir"), "{err}");
    for text in ["--num_threads=0", "--num_devices=many"] {
        assert!(bad.apply_flag_text(text, "OXLA_FLAGS").is_err(), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
