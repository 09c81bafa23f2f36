//! Buffers: device arrays held in oxla's dense host layout, possibly still being produced.
//!
//! A buffer's bytes live in a [`Slot`] behind an `Arc`: work that uses a buffer (an execution,
//! a transfer) clones the slot when it is enqueued, so deleting the buffer meanwhile only drops
//! the buffer's own reference and the running work keeps reading valid data.

use crate::device::{Device, Memory};
use crate::error::{ClientError, Result};
use crate::event::Event;
use oxla_ir::{ElementType, Literal, TensorType};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The bytes of a buffer, filled once by whatever produces them.
pub(crate) struct Slot {
    data: OnceLock<Result<Arc<Vec<u8>>>>,
    event: Event,
}

impl Slot {
    pub(crate) fn pending() -> Arc<Slot> {
        Arc::new(Slot {
            data: OnceLock::new(),
            event: Event::new(),
        })
    }

    pub(crate) fn ready(data: Arc<Vec<u8>>) -> Arc<Slot> {
        Arc::new(Slot {
            data: OnceLock::from(Ok(data)),
            event: Event::ready(),
        })
    }

    /// Stores the result, lets go of the producer's reference and then completes the event;
    /// later calls have no effect.
    ///
    /// The reference goes first so that a waiter woken by the event, which drops the buffer
    /// and runs the program again at once, finds its bytes already back in the evaluator's
    /// buffer cache (the slot's `Drop`) instead of racing this thread for the last
    /// reference: a lost race gave nothing back, so the next run took fresh memory and the
    /// cache then kept one more buffer for good.
    pub(crate) fn fill(self: Arc<Self>, result: Result<Arc<Vec<u8>>>) {
        let status = result.as_ref().map(|_| ()).map_err(Clone::clone);
        if self.data.set(result).is_ok() {
            let event = self.event.clone();
            drop(self);
            event.set(status);
        }
    }

    /// Blocks until the bytes are available.
    pub(crate) fn wait(&self) -> Result<Arc<Vec<u8>>> {
        self.event.wait()?;
        self.data.get().cloned().unwrap_or_else(no_data)
    }

    /// Blocks until the bytes are available and hands them over: taken out of the slot when
    /// nothing else holds it (a donated buffer's), so the caller may hold the only
    /// reference to them; shared otherwise.
    pub(crate) fn into_data(self: Arc<Self>) -> Result<Arc<Vec<u8>>> {
        self.event.wait()?;
        match Arc::try_unwrap(self) {
            Ok(mut slot) => slot.data.take().unwrap_or_else(no_data),
            Err(shared) => shared.wait(),
        }
    }

    pub(crate) fn event(&self) -> &Event {
        &self.event
    }
}

/// The error of a slot whose event is ready but holds no bytes (a broken invariant).
fn no_data() -> Result<Arc<Vec<u8>>> {
    Err(ClientError::Internal(
        "buffer event ready without data".to_string(),
    ))
}

impl Drop for Slot {
    /// Bytes nothing else holds go back to the evaluator, for the results of a later
    /// execution (see `oxla_ir::eval::return_buffer`).
    fn drop(&mut self) {
        if let Some(Ok(data)) = self.data.take() {
            if let Ok(bytes) = Arc::try_unwrap(data) {
                oxla_ir::eval::return_buffer(bytes);
            }
        }
    }
}

struct BufferInner {
    ty: TensorType,
    device: Device,
    memory: Memory,
    slot: Mutex<Option<Arc<Slot>>>,
    external_refs: AtomicUsize,
}

/// An array on a device. Clones share the same buffer (deleting one deletes all).
#[derive(Clone)]
pub struct Buffer {
    inner: Arc<BufferInner>,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("ty", &self.inner.ty)
            .field("device", &self.inner.device.id())
            .field("deleted", &self.is_deleted())
            .finish()
    }
}

impl Buffer {
    pub(crate) fn from_slot(
        ty: TensorType,
        memory: &Memory,
        device: &Device,
        slot: Arc<Slot>,
    ) -> Buffer {
        Buffer {
            inner: Arc::new(BufferInner {
                ty,
                device: device.clone(),
                memory: memory.clone(),
                slot: Mutex::new(Some(slot)),
                external_refs: AtomicUsize::new(0),
            }),
        }
    }

    /// A ready buffer on `device` holding `data` (dense layout, checked against `ty`).
    pub fn from_bytes(device: &Device, ty: TensorType, data: Vec<u8>) -> Result<Buffer> {
        Buffer::from_shared(device, ty, Arc::new(data))
    }

    /// A ready buffer on `device` sharing `data` (dense layout, checked against `ty`).
    fn from_shared(device: &Device, ty: TensorType, data: Arc<Vec<u8>>) -> Result<Buffer> {
        check_byte_len(&ty, data.len())?;
        Ok(Buffer::from_slot(
            ty,
            device.default_memory(),
            device,
            Slot::ready(data),
        ))
    }

    /// A ready buffer on `device` holding `literal`, sharing its bytes.
    pub fn from_literal(device: &Device, literal: Literal) -> Result<Buffer> {
        Buffer::from_shared(device, literal.ty, literal.data)
    }

    /// A ready buffer on `device` whose dense bytes `produce` computes now, on the calling
    /// thread (traced as a transfer like [`Buffer::from_producer`]'s job).
    pub fn from_host_now(
        device: &Device,
        ty: TensorType,
        produce: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Buffer> {
        let data = match device.runtime().pool.tracer() {
            Some(tracer) => {
                let name = format!("host_to_device {ty} to device {}", device.id());
                tracer.span("transfer", &name, produce)?
            }
            None => produce()?,
        };
        Buffer::from_bytes(device, ty, data)
    }

    /// A buffer on `device` whose bytes `produce` computes on the worker pool.
    /// Returns the buffer and an event that is ready once `produce` has returned.
    pub fn from_producer(
        device: &Device,
        ty: TensorType,
        produce: impl FnOnce() -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<(Buffer, Event)> {
        let expected = ty
            .byte_size()
            .ok_or_else(|| ClientError::InvalidArgument(format!("{ty} has no static size")))?;
        let slot = Slot::pending();
        let done = Event::new();
        let buffer = Buffer::from_slot(ty.clone(), device.default_memory(), device, slot.clone());
        let job_done = done.clone();
        let trace_name = || format!("host_to_device {} to device {}", buffer.ty(), device.id());
        let pool = &device.runtime().pool;
        pool.spawn_traced("transfer", trace_name, move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(produce))
                .unwrap_or_else(|payload| {
                    Err(ClientError::from_panic(
                        "host-to-device transfer",
                        payload.as_ref(),
                    ))
                })
                .and_then(|data| {
                    if data.len() == expected {
                        Ok(Arc::new(data))
                    } else {
                        Err(ClientError::Internal(format!(
                            "transfer produced {} bytes for {ty}, expected {expected}",
                            data.len()
                        )))
                    }
                });
            job_done.set(result.as_ref().map(|_| ()).map_err(Clone::clone));
            slot.fill(result);
        });
        Ok((buffer, done))
    }

    /// True when both handles refer to the same buffer.
    pub fn same_buffer(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The array type.
    pub fn ty(&self) -> &TensorType {
        &self.inner.ty
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.inner.ty.element_type
    }

    /// The dimensions.
    pub fn dims(&self) -> &[i64] {
        &self.inner.ty.shape
    }

    /// The device holding the buffer.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// The memory holding the buffer.
    pub fn memory(&self) -> &Memory {
        &self.inner.memory
    }

    /// Bytes the buffer occupies.
    pub fn on_device_size(&self) -> usize {
        self.inner.ty.byte_size().unwrap_or(0)
    }

    /// Drops the buffer's data; later uses fail with FAILED_PRECONDITION. Idempotent.
    pub fn delete(&self) {
        self.lock_slot().take();
    }

    /// True once [`Buffer::delete`] has been called (or the buffer was donated).
    pub fn is_deleted(&self) -> bool {
        self.lock_slot().is_none()
    }

    fn lock_slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<Slot>>> {
        self.inner
            .slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The slot, or an error naming `what` if the buffer was deleted.
    pub(crate) fn slot(&self, what: &str) -> Result<Arc<Slot>> {
        self.lock_slot().clone().ok_or_else(|| {
            ClientError::FailedPrecondition(format!(
                "{what}: buffer {} on device {} has been deleted or donated",
                self.inner.ty,
                self.inner.device.id()
            ))
        })
    }

    /// Takes the slot away (donation): the buffer reads as deleted afterwards.
    pub(crate) fn take_slot(&self, what: &str) -> Result<Arc<Slot>> {
        self.lock_slot().take().ok_or_else(|| {
            ClientError::FailedPrecondition(format!(
                "{what}: buffer {} has been deleted or donated",
                self.inner.ty
            ))
        })
    }

    /// An event that is ready when the data is (with an error if it failed or was deleted).
    pub fn ready_event(&self) -> Event {
        match self.slot("ready event") {
            Ok(slot) => slot.event().clone(),
            Err(err) => Event::ready_with(Err(err)),
        }
    }

    /// Blocks until the data is ready and returns it as a literal.
    pub fn to_literal(&self) -> Result<Literal> {
        let data = self.slot("to host")?.wait()?;
        Ok(Literal::new(self.inner.ty.clone(), data.to_vec())?)
    }

    /// Blocks until the data is ready and returns the shared bytes.
    pub fn data(&self) -> Result<Arc<Vec<u8>>> {
        self.slot("read")?.wait()
    }

    /// Copies the data to the host asynchronously: `write` receives the dense bytes on a worker
    /// thread; the returned event reports its result.
    pub fn to_host_async(
        &self,
        write: impl FnOnce(&[u8]) -> Result<()> + Send + 'static,
    ) -> Result<Event> {
        let slot = self.slot("to host")?;
        let done = Event::new();
        let job_done = done.clone();
        let trace_name = || format!("device_to_host {}", self.inner.ty);
        let pool = &self.inner.device.runtime().pool;
        pool.spawn_traced("transfer", trace_name, move || {
            let result = slot.wait().and_then(|data| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&data)))
                    .unwrap_or_else(|payload| {
                        Err(ClientError::from_panic(
                            "device-to-host transfer",
                            payload.as_ref(),
                        ))
                    })
            });
            job_done.set(result);
        });
        Ok(done)
    }

    /// Copies the buffer to `device`'s default memory.
    pub fn copy_to_device(&self, device: &Device) -> Result<Buffer> {
        self.copy_to(device, device.default_memory())
    }

    /// Copies the buffer to `memory`, which must belong to `device`.
    pub fn copy_to_memory(&self, device: &Device, memory: &Memory) -> Result<Buffer> {
        if memory.device_id() != device.id() {
            return Err(ClientError::InvalidArgument(format!(
                "memory {} does not belong to device {}",
                memory.id(),
                device.id()
            )));
        }
        self.copy_to(device, memory)
    }

    /// A copy into the same memory is allowed (JAX asks for one when it needs a distinct
    /// buffer); the bytes are immutable, so every copy shares them.
    fn copy_to(&self, device: &Device, memory: &Memory) -> Result<Buffer> {
        let src = self.slot("copy")?;
        let dst = Slot::pending();
        let job_dst = dst.clone();
        let trace_name = || {
            format!(
                "device_to_device {} to device {}",
                self.inner.ty,
                device.id()
            )
        };
        let pool = &self.inner.device.runtime().pool;
        pool.spawn_traced("transfer", trace_name, move || {
            // The bytes are immutable, so the copy shares them.
            job_dst.fill(src.wait());
        });
        Ok(Buffer::from_slot(
            self.inner.ty.clone(),
            memory,
            device,
            dst,
        ))
    }

    /// Increments the external reference count (data shared with another framework).
    pub fn increase_external_refs(&self) -> Result<()> {
        self.slot("increase external reference count")?;
        self.inner.external_refs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Decrements the external reference count; an error if it is already zero.
    pub fn decrease_external_refs(&self) -> Result<()> {
        self.inner
            .external_refs
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| {
                ClientError::FailedPrecondition(
                    "external reference count is already zero".to_string(),
                )
            })
    }

    /// The current external reference count.
    pub fn external_refs(&self) -> usize {
        self.inner.external_refs.load(Ordering::SeqCst)
    }

    /// The address of the data (waits until it is ready).
    pub fn data_address(&self) -> Result<usize> {
        let start = std::time::Instant::now();
        let data = self.data()?;
        if let Some(tracer) = self.inner.device.runtime().pool.tracer() {
            // JAX reads host-resident buffers in place through this address (zero copy).
            let name = format!("device_to_host zero-copy {}", self.inner.ty);
            tracer.record("transfer", name, start, Vec::new());
        }
        Ok(data.as_ptr() as usize)
    }
}

/// Checks that `len` bytes fit `ty` in the dense layout.
pub(crate) fn check_byte_len(ty: &TensorType, len: usize) -> Result<()> {
    let expected = ty
        .byte_size()
        .ok_or_else(|| ClientError::InvalidArgument(format!("{ty} has no static size")))?;
    if len != expected {
        return Err(ClientError::InvalidArgument(format!(
            "{ty} needs {expected} bytes, got {len}"
        )));
    }
    Ok(())
}
