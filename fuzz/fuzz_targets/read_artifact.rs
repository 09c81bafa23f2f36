//! Fuzzes the `.oxla` program artifact reader: any bytes give a checked artifact or an
//! error, never a panic, and a checked artifact's sections and initial values can be read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxla_runtime::Artifact;

fuzz_target!(|data: &[u8]| {
    if let Ok(artifact) = Artifact::from_bytes(data.to_vec()) {
        let _ = artifact.module_bytes().len();
        for (idx, global) in artifact.metadata().globals.iter().enumerate() {
            let value = artifact.initial_value(idx);
            assert_eq!(value.is_some(), global.data.is_some());
            if let Some(bytes) = value {
                assert_eq!(Some(bytes.len()), global.value.ty.byte_size());
            }
        }
    }
});
