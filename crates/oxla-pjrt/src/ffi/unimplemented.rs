//! Entry points oxla does not implement, each returning UNIMPLEMENTED with the reason, plus
//! the trivial execute-context objects.

use super::entry::{entry_point, unimplemented_entry_points};
use pjrt_sys::*;

unimplemented_entry_points! {
    PJRT_Client_CreateViewOfDeviceBuffer(PJRT_Client_CreateViewOfDeviceBuffer_Args):
        "oxla buffers own their memory; views of foreign device memory are not supported";
    PJRT_CopyToDeviceStream_Destroy(PJRT_CopyToDeviceStream_Destroy_Args):
        "oxla programs cannot receive from the host (no recv callbacks)";
    PJRT_CopyToDeviceStream_AddChunk(PJRT_CopyToDeviceStream_AddChunk_Args):
        "oxla programs cannot receive from the host (no recv callbacks)";
    PJRT_CopyToDeviceStream_TotalBytes(PJRT_CopyToDeviceStream_TotalBytes_Args):
        "oxla programs cannot receive from the host (no recv callbacks)";
    PJRT_CopyToDeviceStream_GranuleSize(PJRT_CopyToDeviceStream_GranuleSize_Args):
        "oxla programs cannot receive from the host (no recv callbacks)";
    PJRT_CopyToDeviceStream_CurrentBytes(PJRT_CopyToDeviceStream_CurrentBytes_Args):
        "oxla programs cannot receive from the host (no recv callbacks)";
    PJRT_TopologyDescription_Serialize(PJRT_TopologyDescription_Serialize_Args):
        "topologies are described by their device count only and are not serialized";
}

/// Behind `PJRT_ExecuteContext*`: oxla passes no extra per-execution data.
struct ExecuteContextHandle;

entry_point!(
    PJRT_ExecuteContext_Create,
    PJRT_ExecuteContext_Create_Args,
    |args| {
        args.context = Box::into_raw(Box::new(ExecuteContextHandle)).cast();
        Ok(())
    }
);

entry_point!(
    PJRT_ExecuteContext_Destroy,
    PJRT_ExecuteContext_Destroy_Args,
    |args| {
        if !args.context.is_null() {
            // SAFETY: `context` came from PJRT_ExecuteContext_Create and is destroyed once.
            drop(unsafe { Box::from_raw(args.context.cast::<ExecuteContextHandle>()) });
        }
        Ok(())
    }
);
