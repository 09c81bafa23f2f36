//! The worker pool: a fixed set of threads taking jobs from one FIFO queue.
//!
//! Jobs may block waiting for events completed by jobs enqueued *earlier*; because the queue is
//! FIFO, the oldest unfinished job is always running, so such waits cannot deadlock.
//! A panicking job is caught and does not take its worker down.
//! With a [`Tracer`], jobs spawned through [`WorkerPool::spawn_traced`] become trace events.

use crate::error::{ClientError, Result};
use crate::trace::Tracer;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// A fixed-size thread pool with a FIFO queue.
pub struct WorkerPool {
    sender: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    num_threads: usize,
    tracer: Option<Arc<Tracer>>,
}

/// Runs `f`, turning a panic into an internal error that names `context`.
pub fn catch_panic<T>(context: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panic_with(|| context.to_string(), f)
}

/// [`catch_panic`] with the context made only when there is a panic to name.
pub fn catch_panic_with<T>(
    context: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|payload| Err(ClientError::from_panic(&context(), payload.as_ref())))
}

impl WorkerPool {
    /// Starts `num_threads` workers (at least one).
    pub fn new(num_threads: usize) -> std::io::Result<WorkerPool> {
        WorkerPool::with_tracer(num_threads, None)
    }

    /// Starts `num_threads` workers (at least one) whose traced jobs are recorded to `tracer`.
    pub fn with_tracer(
        num_threads: usize,
        tracer: Option<Arc<Tracer>>,
    ) -> std::io::Result<WorkerPool> {
        let num_threads = num_threads.max(1);
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut workers = Vec::with_capacity(num_threads);
        for worker_idx in 0..num_threads {
            let receiver = receiver.clone();
            workers.push(
                std::thread::Builder::new()
                    .name(format!("oxla-worker-{worker_idx}"))
                    .spawn(move || worker_loop(&receiver))?,
            );
        }
        Ok(WorkerPool {
            sender: Mutex::new(Some(sender)),
            workers: Mutex::new(workers),
            num_threads,
            tracer,
        })
    }

    /// Number of worker threads.
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }

    /// The tracer, when tracing is on.
    pub fn tracer(&self) -> Option<&Arc<Tracer>> {
        self.tracer.as_ref()
    }

    /// Queues `job` like [`WorkerPool::spawn`]; with a tracer, its run becomes an event of
    /// category `cat` named by `name` (called only when tracing).
    pub fn spawn_traced(
        &self,
        cat: &'static str,
        name: impl FnOnce() -> String,
        job: impl FnOnce() + Send + 'static,
    ) {
        match &self.tracer {
            None => self.spawn(job),
            Some(tracer) => {
                let tracer = tracer.clone();
                let name = name();
                self.spawn(move || {
                    let start = std::time::Instant::now();
                    job();
                    tracer.record(cat, name, start, Vec::new());
                });
            }
        }
    }

    /// Queues `job`; runs it on the calling thread if the pool has shut down.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let job: Job = Box::new(job);
        let rejected = {
            let guard = self
                .sender
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match guard.as_ref() {
                Some(sender) => sender.send(job).err().map(|e| e.0),
                None => Some(job),
            }
        };
        if let Some(job) = rejected {
            run_job(job);
        }
    }
}

fn run_job(job: Job) {
    // Jobs catch their own panics to report them; this is the last line of defence.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
}

fn worker_loop(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let guard = receiver
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            guard.recv()
        };
        match job {
            Ok(job) => run_job(job),
            Err(_) => return,
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        drop(sender);
        let workers = std::mem::take(
            &mut *self
                .workers
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        let current = std::thread::current().id();
        for worker in workers {
            // A pool dropped from one of its own jobs cannot join that worker.
            if worker.thread().id() != current {
                let _ = worker.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    #[test]
    fn runs_jobs_off_thread_in_order_and_survives_panics() {
        let pool = WorkerPool::new(2).unwrap();
        let first = Event::new();
        let second = Event::new();
        let caller = std::thread::current().id();
        pool.spawn(|| panic!("job panics"));
        let f = first.clone();
        pool.spawn(move || {
            assert_ne!(std::thread::current().id(), caller);
            std::thread::sleep(std::time::Duration::from_millis(10));
            f.set(Ok(()));
        });
        let (f, s) = (first.clone(), second.clone());
        pool.spawn(move || {
            f.wait().unwrap();
            s.set(Ok(()));
        });
        assert_eq!(second.wait(), Ok(()));
        assert!(first.is_ready());
        assert_eq!(pool.num_threads(), 2);
    }

    #[test]
    fn a_panicking_traced_job_reports_an_error_and_is_traced() {
        let path =
            std::env::temp_dir().join(format!("oxla-pool-trace-{}.json", std::process::id()));
        let tracer = Arc::new(Tracer::new(&path));
        let pool = WorkerPool::with_tracer(1, Some(tracer.clone())).unwrap();
        let done = Event::new();
        let job_done = done.clone();
        pool.spawn_traced(
            "execute",
            || "execute boom".to_string(),
            move || {
                let result = catch_panic("execution of boom", || -> Result<()> {
                    panic!("kernel bug")
                });
                job_done.set(result);
            },
        );
        let err = done.wait().unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Internal);
        assert!(err.message().contains("execution of boom"), "{err}");
        assert!(err.message().contains("kernel bug"), "{err}");
        // The worker survived: the next job runs on it.
        let after = Event::new();
        let job_after = after.clone();
        pool.spawn(move || {
            job_after.set(Ok(()));
        });
        assert_eq!(after.wait(), Ok(()));
        drop(pool);
        let trace = tracer.to_json();
        let names: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["execute boom"]);
        drop(tracer);
        std::fs::remove_file(&path).unwrap();
    }
}
