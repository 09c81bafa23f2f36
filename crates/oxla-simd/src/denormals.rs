//! Denormal flushing, as XLA's CPU backend computes: float operations read denormal
//! operands as zero and write zero instead of a denormal result.
//!
//! [`FlushDenormals`] sets the floating-point control register of the current thread for
//! its lifetime (MXCSR's flush-to-zero and denormals-are-zero bits on x86-64, FPCR's FZ bit
//! on AArch64) and restores the previous setting when dropped; [`KeepDenormals`] clears
//! them the same way, for library code that needs gradual underflow. Elsewhere both do
//! nothing.
//! Bit moves (copies, selects, conversions done on bits) are not float operations and keep
//! denormals either way.

/// While alive, float arithmetic on this thread keeps denormals (gradual underflow).
#[must_use = "the setting lasts only while the guard is alive"]
pub struct KeepDenormals {
    _restore: Restore,
}

/// While alive, float arithmetic on this thread flushes denormals to zero.
#[must_use = "the setting lasts only while the guard is alive"]
pub struct FlushDenormals {
    _restore: Restore,
}

/// The thread's flush setting before a guard changed it, put back when the guard drops.
struct Restore {
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    saved: u64,
}

impl Restore {
    fn set(flush: bool) -> Restore {
        Restore {
            saved: imp::set(flush),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        imp::restore(self.saved);
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    /// MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6).
    const FLUSH: u32 = 0x8040;

    pub(super) fn set(flush: bool) -> u64 {
        let mut csr: u32 = 0;
        // SAFETY: `stmxcsr` stores the 32-bit control register to the given address, which
        // points to a live, aligned u32; `ldmxcsr` loads a value whose reserved bits are
        // those just read, so it cannot fault. Only the rounding/flush state of this
        // thread changes.
        unsafe {
            core::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
            let wanted = if flush { csr | FLUSH } else { csr & !FLUSH };
            core::arch::asm!("ldmxcsr [{}]", in(reg) &wanted, options(nostack, preserves_flags));
        }
        u64::from(csr)
    }

    pub(super) fn restore(saved: u64) {
        let csr = saved as u32;
        // SAFETY: restores the value `set` read from this register.
        unsafe {
            core::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    /// FPCR flush-to-zero (bit 24).
    const FZ: u64 = 1 << 24;

    pub(super) fn set(flush: bool) -> u64 {
        let fpcr: u64;
        // SAFETY: reading and writing FPCR only changes this thread's floating-point
        // rounding/flush state; the value written is the one read with FZ set or cleared.
        unsafe {
            core::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags));
            let wanted = if flush { fpcr | FZ } else { fpcr & !FZ };
            core::arch::asm!("msr fpcr, {}", in(reg) wanted, options(nomem, nostack, preserves_flags));
        }
        fpcr
    }

    pub(super) fn restore(saved: u64) {
        // SAFETY: restores the value `set` read from this register.
        unsafe {
            core::arch::asm!("msr fpcr, {}", in(reg) saved, options(nomem, nostack, preserves_flags));
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    pub(super) fn set(_flush: bool) -> u64 {
        0
    }

    pub(super) fn restore(_saved: u64) {}
}

impl FlushDenormals {
    /// Flushes denormals on this thread until the guard is dropped.
    pub fn new() -> FlushDenormals {
        FlushDenormals {
            _restore: Restore::set(true),
        }
    }
}

impl Default for FlushDenormals {
    fn default() -> Self {
        FlushDenormals::new()
    }
}

impl KeepDenormals {
    /// Keeps denormals on this thread until the guard is dropped.
    pub fn new() -> KeepDenormals {
        KeepDenormals {
            _restore: Restore::set(false),
        }
    }
}

impl Default for KeepDenormals {
    fn default() -> Self {
        KeepDenormals::new()
    }
}

#[cfg(test)]
mod tests {
    use super::{FlushDenormals, KeepDenormals};
    use std::hint::black_box;

    #[test]
    fn arithmetic_flushes_only_while_the_guard_lives() {
        let tiny = black_box(f32::from_bits(1 << 20)); // a denormal
        let tiny64 = black_box(f64::from_bits(1 << 40));
        assert_ne!(black_box(tiny * 2.0), 0.0);
        {
            let _flush = FlushDenormals::new();
            if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
                // Results and operands: a denormal product and a denormal read as zero.
                assert_eq!(black_box(tiny * 2.0), 0.0);
                assert_eq!(black_box(black_box(1e-30f32) * 1e-10), 0.0);
                assert_eq!(black_box(tiny64 * 2.0), 0.0);
                // Bit moves keep it.
                assert_eq!(black_box(tiny).to_bits(), 1 << 20);
            }
        }
        assert_ne!(black_box(tiny * 2.0), 0.0);
        assert_ne!(black_box(black_box(1e-30f32) * 1e-10), 0.0);
    }

    #[test]
    fn keeping_undoes_flushing_while_it_lives() {
        let tiny = black_box(f32::from_bits(1 << 20));
        let _flush = FlushDenormals::new();
        {
            let _keep = KeepDenormals::new();
            assert_ne!(black_box(tiny * 2.0), 0.0);
            assert_ne!(black_box(black_box(1e-30f32) * 1e-10), 0.0);
        }
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(black_box(tiny * 2.0), 0.0);
        }
    }
}
