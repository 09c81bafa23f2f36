//! Observability at run time: Chrome trace-event files (the `trace_path` flag) and `tracing`
//! log output (the `OXLA_LOG` environment variable).
//!
//! A [`Tracer`] collects complete ("X") events in memory: compile phases, executions and
//! transfers. It writes the whole file (`{"traceEvents": [...]}`, loadable in Perfetto or
//! `chrome://tracing`) after each compile, at most once a second while events arrive, and when
//! it is dropped with its client. It does not sample, and it records nothing when no trace path
//! is set (no tracer exists then).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable holding the log filter (`tracing-subscriber` `EnvFilter` syntax,
/// e.g. `debug` or `oxla_client=trace`).
pub const LOG_ENV: &str = "OXLA_LOG";

/// The most events a trace keeps; later ones are counted and dropped.
pub const MAX_TRACE_EVENTS: usize = 1_000_000;

const FLUSH_INTERVAL: Duration = Duration::from_secs(1);

/// Starts `tracing` output to stderr once per process when `OXLA_LOG` is set; nothing is
/// printed otherwise. A malformed filter is reported by every call.
pub fn init_logging() -> crate::Result<()> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| {
        let filter = match std::env::var(LOG_ENV) {
            Ok(filter) if !filter.trim().is_empty() => filter,
            _ => return Ok(()),
        };
        let filter = tracing_subscriber::EnvFilter::try_new(&filter)
            .map_err(|e| format!("{LOG_ENV}={filter:?} is not a valid log filter: {e}"))?;
        // Another library may have installed a subscriber already; then its output is used.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
        Ok(())
    })
    .clone()
    .map_err(crate::ClientError::InvalidArgument)
}

/// A small, stable id for the calling thread (trace `tid`s).
fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

struct TraceEvent {
    name: String,
    cat: &'static str,
    start: Duration,
    dur: Duration,
    tid: u64,
    args: Vec<(&'static str, String)>,
}

#[derive(Default)]
struct TraceState {
    events: Vec<TraceEvent>,
    threads: BTreeMap<u64, String>,
    dropped: u64,
    dirty: bool,
    last_flush: Option<Instant>,
}

/// Collects trace events and writes them to one Chrome trace JSON file.
pub struct Tracer {
    path: PathBuf,
    origin: Instant,
    pid: u32,
    state: Mutex<TraceState>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer").field("path", &self.path).finish()
    }
}

impl Tracer {
    /// A tracer writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Tracer {
        Tracer {
            path: path.into(),
            origin: Instant::now(),
            pid: std::process::id(),
            state: Mutex::new(TraceState::default()),
        }
    }

    /// The output file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TraceState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a complete event of category `cat` that ran from `start` until now on this thread.
    pub fn record(
        &self,
        cat: &'static str,
        name: impl Into<String>,
        start: Instant,
        args: Vec<(&'static str, String)>,
    ) {
        let end = Instant::now();
        let tid = thread_id();
        let event = TraceEvent {
            name: name.into(),
            cat,
            start: start.saturating_duration_since(self.origin),
            dur: end.saturating_duration_since(start),
            tid,
            args,
        };
        let flush_now = {
            let mut state = self.lock();
            state.threads.entry(tid).or_insert_with(|| {
                std::thread::current()
                    .name()
                    .unwrap_or("thread")
                    .to_string()
            });
            if state.events.len() < MAX_TRACE_EVENTS {
                state.events.push(event);
            } else {
                state.dropped += 1;
            }
            state.dirty = true;
            state
                .last_flush
                .is_none_or(|last| last.elapsed() >= FLUSH_INTERVAL)
        };
        if flush_now {
            self.flush_quietly();
        }
    }

    /// Runs `f`, recording it as an event.
    pub fn span<T>(&self, cat: &'static str, name: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.record(cat, name, start, Vec::new());
        out
    }

    /// The trace as Chrome trace-event JSON.
    pub fn to_json(&self) -> Value {
        let state = self.lock();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut events = Vec::with_capacity(state.events.len() + state.threads.len() + 1);
        events.push(json!({
            "name": "process_name", "ph": "M", "pid": self.pid, "tid": 0,
            "args": {"name": "oxla"},
        }));
        for (tid, name) in &state.threads {
            events.push(json!({
                "name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid,
                "args": {"name": name},
            }));
        }
        for event in &state.events {
            let args: serde_json::Map<String, Value> = event
                .args
                .iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
                .collect();
            events.push(json!({
                "name": event.name,
                "cat": event.cat,
                "ph": "X",
                "ts": us(event.start),
                "dur": us(event.dur),
                "pid": self.pid,
                "tid": event.tid,
                "args": args,
            }));
        }
        json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {"producer": crate::client::platform_version(), "dropped_events": state.dropped},
        })
    }

    /// Writes the file now (through a temporary file and a rename, so readers never see half).
    pub fn flush(&self) -> std::io::Result<()> {
        let text = serde_json::to_vec(&self.to_json()).map_err(std::io::Error::other)?;
        {
            let mut state = self.lock();
            state.dirty = false;
            state.last_flush = Some(Instant::now());
        }
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".{}.tmp", self.pid));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Writes the file if events arrived since the last write; failures are logged.
    pub fn flush_quietly(&self) {
        if !self.lock().dirty {
            return;
        }
        if let Err(err) = self.flush() {
            tracing::warn!("cannot write trace {}: {err}", self.path.display());
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.flush_quietly();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_chrome_trace_json() {
        let dir = std::env::temp_dir().join(format!("oxla-trace-test-{}", std::process::id()));
        let path = dir.join("trace.json");
        let tracer = Tracer::new(&path);
        tracer.span("compile", "read", || ());
        let start = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| tracer.record("execute", "execute jit_f", start, Vec::new()));
        });
        drop(tracer);
        let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(complete.len(), 2);
        assert_eq!(complete[0]["name"], "read");
        assert_eq!(complete[0]["cat"], "compile");
        assert_eq!(complete[1]["name"], "execute jit_f");
        assert_ne!(complete[0]["tid"], complete[1]["tid"]);
        for event in complete {
            assert!(event["ts"].as_f64().unwrap() >= 0.0);
            assert!(event["dur"].as_f64().unwrap() >= 0.0);
            assert_eq!(event["pid"], std::process::id());
        }
        assert!(events
            .iter()
            .any(|e| e["ph"] == "M" && e["name"] == "thread_name"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
