//! Integer division by a constant without a divide: the quotient of a 32-bit `x` by a known
//! divisor as the high half of `x` times a "magic" multiplier, corrected and shifted (the
//! method of Granlund and Montgomery, with the multipliers chosen as in Warren's *Hacker's
//! Delight*, chapter 10). [`DivideBy`] picks the cheapest sequence for a divisor, and
//! [`DivideBy::quotient`] computes it one lane at a time exactly as the generated code does
//! it in sixteen, which the tests hold against Rust's wrapping division.

/// How the quotient `x / c` (truncated toward zero; `MIN / -1` wraps to `MIN`) is computed
/// for one constant divisor `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DivideBy {
    /// `c == 0`: no quotient by this rule (the caller gives all ones, as XLA does).
    Zero,
    /// `c == 1`: `x`.
    One,
    /// Signed `c == -1`: `0 - x`, wrapping.
    MinusOne,
    /// Signed `c == 2^k`, `1 <= k <= 30`: `x` plus `2^k - 1` when negative (so the shift
    /// rounds toward zero), shifted right arithmetically by `k`.
    SignedPowerOfTwo(u32),
    /// Unsigned `c == 2^k`, `k >= 1`: `x >> k`.
    UnsignedPowerOfTwo(u32),
    /// Any other signed divisor: `h` = the high half of the signed product `x * magic`, plus
    /// `x` when `add > 0` or minus `x` when `add < 0`, shifted right arithmetically by
    /// `shift`, plus one when that is negative.
    Signed { magic: i32, add: i8, shift: u32 },
    /// Any other unsigned divisor: `h` = the high half of the unsigned product `x * magic`;
    /// the quotient is `h >> shift`, or with `add`, `(((x - h) >> 1) + h) >> (shift - 1)`
    /// (the multiplier needs a 33rd bit, added as `x`).
    Unsigned { magic: u32, add: bool, shift: u32 },
}

impl DivideBy {
    /// The sequence for dividing by `c`, read as an `i32` when `signed`.
    pub(crate) fn new(c: u32, signed: bool) -> DivideBy {
        match (c, signed) {
            (0, _) => DivideBy::Zero,
            (1, _) => DivideBy::One,
            (u32::MAX, true) => DivideBy::MinusOne,
            (c, true) if c.is_power_of_two() && c < 1 << 31 => {
                DivideBy::SignedPowerOfTwo(c.trailing_zeros())
            }
            (c, false) if c.is_power_of_two() => DivideBy::UnsignedPowerOfTwo(c.trailing_zeros()),
            (c, true) => signed_magic(c as i32),
            (c, false) => unsigned_magic(c),
        }
    }

    /// `x / c` as the generated code computes it (the bits of an `i32` when signed); `None`
    /// for [`DivideBy::Zero`].
    #[cfg(test)]
    pub(crate) fn quotient(self, x: u32) -> Option<u32> {
        Some(match self {
            DivideBy::Zero => return None,
            DivideBy::One => x,
            DivideBy::MinusOne => 0u32.wrapping_sub(x),
            DivideBy::SignedPowerOfTwo(k) => {
                let bias = (((x as i32) >> 31) as u32) >> (32 - k);
                (x.wrapping_add(bias) as i32 >> k) as u32
            }
            DivideBy::UnsignedPowerOfTwo(k) => x >> k,
            DivideBy::Signed { magic, add, shift } => {
                let high = ((i64::from(x as i32) * i64::from(magic)) >> 32) as u32;
                let q = match add {
                    1.. => high.wrapping_add(x),
                    0 => high,
                    _ => high.wrapping_sub(x),
                };
                let q = ((q as i32) >> shift) as u32;
                q.wrapping_add(q >> 31)
            }
            DivideBy::Unsigned { magic, add, shift } => {
                let high = ((u64::from(x) * u64::from(magic)) >> 32) as u32;
                if add {
                    ((x.wrapping_sub(high) >> 1).wrapping_add(high)) >> (shift - 1)
                } else {
                    high >> shift
                }
            }
        })
    }
}

/// The multiplier and shift for a signed divisor `d` with `|d| >= 2` (`MIN` included): the
/// smallest `p >= 32` for which `m = ceil(2^p / |d|)` reproduces every quotient, found by
/// doubling `2^p / |d|` and `2^p / nc` together, where `nc` is the largest dividend with
/// remainder `|d| - 1`.
fn signed_magic(d: i32) -> DivideBy {
    const TWO_31: u32 = 1 << 31;
    let ad = d.unsigned_abs();
    let t = TWO_31 + ((d as u32) >> 31);
    let anc = t - 1 - t % ad;
    let mut p = 31;
    let (mut q1, mut r1) = (TWO_31 / anc, TWO_31 % anc);
    let (mut q2, mut r2) = (TWO_31 / ad, TWO_31 % ad);
    loop {
        p += 1;
        q1 = q1.wrapping_mul(2);
        r1 = r1.wrapping_mul(2);
        if r1 >= anc {
            q1 = q1.wrapping_add(1);
            r1 = r1.wrapping_sub(anc);
        }
        q2 = q2.wrapping_mul(2);
        r2 = r2.wrapping_mul(2);
        if r2 >= ad {
            q2 = q2.wrapping_add(1);
            r2 = r2.wrapping_sub(ad);
        }
        let delta = ad - r2;
        if !(q1 < delta || (q1 == delta && r1 == 0)) {
            break;
        }
    }
    let magic = q2.wrapping_add(1) as i32;
    let magic = if d < 0 { magic.wrapping_neg() } else { magic };
    let add = if d > 0 && magic < 0 {
        1
    } else if d < 0 && magic > 0 {
        -1
    } else {
        0
    };
    DivideBy::Signed {
        magic,
        add,
        shift: p - 32,
    }
}

/// The multiplier and shift for an unsigned divisor `d >= 2`, as [`signed_magic`] over the
/// unsigned range; `add` when the multiplier needs 33 bits.
fn unsigned_magic(d: u32) -> DivideBy {
    const TWO_31: u32 = 1 << 31;
    let nc = u32::MAX - d.wrapping_neg() % d;
    let mut add = false;
    let mut p = 31;
    let (mut q1, mut r1) = (TWO_31 / nc, TWO_31 % nc);
    let (mut q2, mut r2) = ((TWO_31 - 1) / d, (TWO_31 - 1) % d);
    loop {
        p += 1;
        if r1 >= nc - r1 {
            q1 = q1.wrapping_mul(2).wrapping_add(1);
            r1 = r1.wrapping_mul(2).wrapping_sub(nc);
        } else {
            q1 = q1.wrapping_mul(2);
            r1 = r1.wrapping_mul(2);
        }
        if r2 + 1 >= d - r2 {
            add |= q2 >= TWO_31 - 1;
            q2 = q2.wrapping_mul(2).wrapping_add(1);
            r2 = r2.wrapping_mul(2).wrapping_add(1).wrapping_sub(d);
        } else {
            add |= q2 >= TWO_31;
            q2 = q2.wrapping_mul(2);
            r2 = r2.wrapping_mul(2).wrapping_add(1);
        }
        let delta = d - 1 - r2;
        if !(p < 64 && (q1 < delta || (q1 == delta && r1 == 0))) {
            break;
        }
    }
    DivideBy::Unsigned {
        magic: q2.wrapping_add(1),
        add,
        shift: p - 32,
    }
}

#[cfg(test)]
mod tests {
    use super::DivideBy;

    /// Small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
        }
    }

    /// Divisors: every small one, powers of two and their neighbours, both signs and the
    /// extremes, and random ones.
    fn divisors(rng: &mut Rng) -> Vec<u32> {
        let mut ds: Vec<u32> = (1..=3000).collect();
        for k in 0..32 {
            let p = 1u32 << k;
            ds.extend([p, p.wrapping_sub(1), p.wrapping_add(1)]);
        }
        let negated: Vec<u32> = ds.iter().map(|d| d.wrapping_neg()).collect();
        ds.extend(negated);
        ds.extend([i32::MAX as u32, i32::MIN as u32, u32::MAX, u32::MAX - 1]);
        ds.extend((0..3000).map(|_| rng.next()));
        ds.retain(|&d| d != 0);
        ds
    }

    /// Dividends: the extremes, the multiples of `d` nearest to points spread over the
    /// range and their neighbours (where a multiplier one unit off shows), and random ones.
    fn dividends(rng: &mut Rng, d: u32, signed: bool) -> Vec<u32> {
        let mut xs = vec![
            0,
            1,
            2,
            u32::MAX,
            u32::MAX - 1,
            1 << 31,
            (1 << 31) - 1,
            (1 << 31) + 1,
        ];
        for k in 0..64u32 {
            let near = k
                .wrapping_mul(u32::MAX / 64)
                .wrapping_add(rng.next() % 1024);
            let m = if signed {
                ((near as i32).wrapping_div(d as i32)).wrapping_mul(d as i32) as u32
            } else {
                near - near % d
            };
            xs.extend([m, m.wrapping_sub(1), m.wrapping_add(1), m.wrapping_add(d)]);
            xs.extend([m.wrapping_add(d).wrapping_sub(1), m.wrapping_sub(d)]);
        }
        xs.extend((0..64).map(|_| rng.next()));
        xs
    }

    #[test]
    fn every_sequence_gives_the_truncated_quotient() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for d in divisors(&mut rng) {
            for signed in [true, false] {
                let division = DivideBy::new(d, signed);
                for x in dividends(&mut rng, d, signed) {
                    let want = if signed {
                        (x as i32).wrapping_div(d as i32) as u32
                    } else {
                        x / d
                    };
                    assert_eq!(
                        division.quotient(x),
                        Some(want),
                        "{x:#x} / {d:#x} (signed {signed}) by {division:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn small_divisors_take_the_short_sequences() {
        assert_eq!(DivideBy::new(0, true), DivideBy::Zero);
        assert_eq!(DivideBy::new(1, false), DivideBy::One);
        assert_eq!(DivideBy::new(u32::MAX, true), DivideBy::MinusOne);
        assert_eq!(DivideBy::new(8, true), DivideBy::SignedPowerOfTwo(3));
        assert_eq!(
            DivideBy::new(1 << 31, false),
            DivideBy::UnsignedPowerOfTwo(31)
        );
        // `MIN` and the negative powers of two take the multiplier.
        assert!(matches!(
            DivideBy::new(1 << 31, true),
            DivideBy::Signed { .. }
        ));
        assert!(matches!(
            DivideBy::new(-8i32 as u32, true),
            DivideBy::Signed { .. }
        ));
        // 7 needs a 33-bit multiplier unsigned (the `add` form), and an added `x` signed.
        assert!(matches!(
            DivideBy::new(7, false),
            DivideBy::Unsigned { add: true, .. }
        ));
        assert!(matches!(
            DivideBy::new(7, true),
            DivideBy::Signed { add: 1, .. }
        ));
    }
}
