//! Event entry points.

use super::convert::{self, SendPtr};
use super::entry::entry_point;
use super::error::status_to_raw;
use super::handles::EventHandle;
use oxla_client::{ClientError, Event, Result};
use pjrt_sys::*;

/// Hands `event` to the caller as an owned `PJRT_Event*`.
pub(crate) fn into_raw(event: Event) -> *mut PJRT_Event {
    Box::into_raw(Box::new(EventHandle { event })).cast()
}

fn event<'a>(ptr: *const PJRT_Event) -> Result<&'a EventHandle> {
    // SAFETY: PJRT callers pass events this plugin created and have not destroyed.
    unsafe { convert::handle(ptr, "event") }
}

entry_point!(PJRT_Event_Destroy, PJRT_Event_Destroy_Args, |args| {
    if !args.event.is_null() {
        // SAFETY: `event` came from `into_raw` and is destroyed once.
        drop(unsafe { Box::from_raw(args.event.cast::<EventHandle>()) });
    }
    Ok(())
});

entry_point!(PJRT_Event_IsReady, PJRT_Event_IsReady_Args, |args| {
    args.is_ready = event(args.event)?.event.is_ready();
    Ok(())
});

entry_point!(PJRT_Event_Error, PJRT_Event_Error_Args, |args| {
    match event(args.event)?.event.status() {
        Some(status) => status,
        None => Err(ClientError::FailedPrecondition(
            "PJRT_Event_Error called before the event is ready".to_string(),
        )),
    }
});

entry_point!(PJRT_Event_Await, PJRT_Event_Await_Args, |args| {
    event(args.event)?.event.wait()
});

entry_point!(PJRT_Event_OnReady, PJRT_Event_OnReady_Args, |args| {
    let handle = event(args.event)?;
    let callback = args
        .callback
        .ok_or_else(|| ClientError::InvalidArgument("callback is null".to_string()))?;
    let user_arg = SendPtr(args.user_arg);
    handle.event.on_ready(move |status| {
        let user_arg = user_arg;
        // SAFETY: the caller registered `callback` with `user_arg` and keeps both valid until
        // the callback runs; it takes ownership of the error.
        unsafe { callback(status_to_raw(status), user_arg.0) };
    });
    Ok(())
});
