//! Events: one-shot completion signals that carry an optional error.
//!
//! An [`Event`] starts pending and becomes ready exactly once, with `Ok(())` or an error.
//! Waiters block on a condition variable; callbacks registered with [`Event::on_ready`] run
//! exactly once, on the thread that completes the event, or at once when it is already ready.

use crate::error::{ClientError, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

type Callback = Box<dyn FnOnce(Result<()>) + Send>;

#[derive(Default)]
struct State {
    status: Option<Result<()>>,
    callbacks: Vec<Callback>,
    /// Threads blocked in [`Event::wait`]: completing an event nobody waits on makes no
    /// wake-up call (a system call on Linux, on every execution's events).
    waiters: usize,
}

struct Inner {
    state: Mutex<State>,
    ready: Condvar,
}

/// A completion signal shared between a producer and any number of waiters.
#[derive(Clone)]
pub struct Event {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("ready", &self.is_ready())
            .finish()
    }
}

impl Default for Event {
    fn default() -> Event {
        Event::new()
    }
}

impl Event {
    /// A pending event.
    pub fn new() -> Event {
        Event {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
            }),
        }
    }

    /// An event that is already ready without an error. All such events are one shared
    /// event: making one allocates nothing (the results of every inline execution get one).
    pub fn ready() -> Event {
        static READY: std::sync::OnceLock<Event> = std::sync::OnceLock::new();
        READY.get_or_init(|| Event::ready_with(Ok(()))).clone()
    }

    /// An event that is already ready with `status`.
    pub fn ready_with(status: Result<()>) -> Event {
        let event = Event::new();
        event.set(status);
        event
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a callback panicked elsewhere; the state stays consistent.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Completes the event. Only the first call has an effect; it returns whether it did.
    pub fn set(&self, status: Result<()>) -> bool {
        let callbacks = {
            let mut state = self.lock();
            if state.status.is_some() {
                return false;
            }
            state.status = Some(status.clone());
            if state.waiters > 0 {
                self.inner.ready.notify_all();
            }
            std::mem::take(&mut state.callbacks)
        };
        for callback in callbacks {
            callback(status.clone());
        }
        true
    }

    /// True once the event has completed (with or without an error).
    pub fn is_ready(&self) -> bool {
        self.lock().status.is_some()
    }

    /// The status, if ready.
    pub fn status(&self) -> Option<Result<()>> {
        self.lock().status.clone()
    }

    /// Blocks until the event is ready and returns its status.
    pub fn wait(&self) -> Result<()> {
        let mut state = self.lock();
        loop {
            if let Some(status) = &state.status {
                return status.clone();
            }
            state.waiters += 1;
            state = self
                .inner
                .ready
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.waiters -= 1;
        }
    }

    /// Runs `callback` once the event is ready: now, on this thread, if it already is.
    pub fn on_ready(&self, callback: impl FnOnce(Result<()>) + Send + 'static) {
        let status = {
            let mut state = self.lock();
            match &state.status {
                Some(status) => status.clone(),
                None => {
                    state.callbacks.push(Box::new(callback));
                    return;
                }
            }
        };
        callback(status);
    }

    /// An event that becomes ready when all `events` are, with the first error among them.
    pub fn join(events: &[Event]) -> Event {
        let joined = Event::new();
        if events.is_empty() {
            joined.set(Ok(()));
            return joined;
        }
        let remaining = Arc::new(Mutex::new((events.len(), None::<ClientError>)));
        for event in events {
            let joined = joined.clone();
            let remaining = remaining.clone();
            event.on_ready(move |status| {
                let finished = {
                    let mut guard = remaining
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    guard.0 -= 1;
                    if let Err(err) = status {
                        guard.1.get_or_insert(err);
                    }
                    (guard.0 == 0).then(|| guard.1.take())
                };
                if let Some(first_error) = finished {
                    joined.set(first_error.map_or(Ok(()), Err));
                }
            });
        }
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn set_once_and_wait_from_another_thread() {
        let event = Event::new();
        assert!(!event.is_ready());
        let producer = event.clone();
        let handle = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            producer.set(Err(ClientError::Internal("late".into())))
        });
        assert_eq!(event.wait(), Err(ClientError::Internal("late".into())));
        assert!(handle.join().unwrap());
        assert!(!event.set(Ok(())), "second set has no effect");
        assert_eq!(
            event.status(),
            Some(Err(ClientError::Internal("late".into())))
        );
    }

    #[test]
    fn callbacks_fire_exactly_once_before_and_after_ready() {
        let count = Arc::new(AtomicUsize::new(0));
        let event = Event::new();
        let c = count.clone();
        event.on_ready(move |s| {
            assert!(s.is_ok());
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 0);
        event.set(Ok(()));
        event.set(Ok(()));
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let c = count.clone();
        event.on_ready(move |_| {
            c.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn the_shared_ready_event_stays_ready_and_runs_callbacks_at_once() {
        let event = Event::ready();
        assert!(!event.set(Err(ClientError::Internal("late".into()))));
        assert_eq!(Event::ready().status(), Some(Ok(())));
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        Event::ready().on_ready(move |s| {
            assert!(s.is_ok());
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(event.wait(), Ok(()));
    }

    #[test]
    fn join_reports_first_error() {
        let a = Event::new();
        let b = Event::new();
        let joined = Event::join(&[a.clone(), b.clone()]);
        a.set(Ok(()));
        assert!(!joined.is_ready());
        b.set(Err(ClientError::NotFound("x".into())));
        assert_eq!(joined.wait(), Err(ClientError::NotFound("x".into())));
        assert_eq!(Event::join(&[]).wait(), Ok(()));
    }
}
