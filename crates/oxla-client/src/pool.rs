//! The worker pool: a fixed set of threads taking jobs from one FIFO queue.
//!
//! Jobs may block waiting for events completed by jobs enqueued *earlier*; because the queue is
//! FIFO, the oldest unfinished job is always running, so such waits cannot deadlock.
//! A panicking job is caught and does not take its worker down.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// A fixed-size thread pool with a FIFO queue.
pub struct WorkerPool {
    sender: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    num_threads: usize,
}

impl WorkerPool {
    /// Starts `num_threads` workers (at least one).
    pub fn new(num_threads: usize) -> std::io::Result<WorkerPool> {
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
        })
    }

    /// Number of worker threads.
    pub fn num_threads(&self) -> usize {
        self.num_threads
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
}
