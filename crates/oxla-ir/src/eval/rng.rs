//! `rng_bit_generator`: the counter-based THREE_FRY and PHILOX bit generators, bit-exact
//! with XLA's definitions (and so with JAX on CPU).
//!
//! The state is a `ui64` vector whose element 0 is the key. THREE_FRY (Threefry-2x32, 20
//! rounds) uses element 1 as a 64-bit counter. PHILOX (Philox-4x32, 10 rounds) uses a
//! 128-bit counter: elements (1, 2) when the state has three or more elements, else
//! (1, 0) with only the low half written back. `DEFAULT` is PHILOX, as on XLA CPU.
//!
//! Both produce 32-bit words; 64-bit outputs join two words (low first) and narrower ones
//! keep the low bits of one word each. How words map to output positions follows XLA:
//! THREE_FRY splits the shape in halves along its first even dimension (else its largest)
//! and interleaves the two words of one counter along it; PHILOX emits the four words of
//! each counter in order.

use super::context::OpCx;
use crate::attrs::RngAlgorithm;
use crate::{Attribute, ElementType, IrError, Literal, TensorType};

const THREEFRY_ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];

/// Threefry-2x32 with 20 rounds on counter words `x` under key words `key`.
fn threefry2x32(key: [u32; 2], x: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], 0x1BD1_1BDA ^ key[0] ^ key[1]];
    let mut x = [x[0].wrapping_add(ks[0]), x[1].wrapping_add(ks[1])];
    for block in 0..5usize {
        let rot = if block % 2 == 0 {
            &THREEFRY_ROTATIONS[..4]
        } else {
            &THREEFRY_ROTATIONS[4..]
        };
        for &r in rot {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(r) ^ x[0];
        }
        // Key injection number block + 1.
        let s = block + 1;
        x[0] = x[0].wrapping_add(ks[s % 3]);
        x[1] = x[1].wrapping_add(ks[(s + 1) % 3]).wrapping_add(s as u32);
    }
    x
}

/// Philox-4x32 with 10 rounds.
fn philox4x32(key: [u32; 2], mut x: [u32; 4]) -> [u32; 4] {
    let mut key = key;
    for _ in 0..10 {
        let p0 = u64::from(x[0]) * 0xD251_1F53;
        let p1 = u64::from(x[2]) * 0xCD9E_8D57;
        x = [
            ((p1 >> 32) as u32) ^ x[1] ^ key[0],
            p1 as u32,
            ((p0 >> 32) as u32) ^ x[3] ^ key[1],
            p0 as u32,
        ];
        key = [
            key[0].wrapping_add(0x9E37_79B9),
            key[1].wrapping_add(0xBB67_AE85),
        ];
    }
    x
}

fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

/// THREE_FRY words for `shape` (32-bit outputs), and the counter advance.
fn threefry_words32(key: u64, counter: u64, shape: &[usize]) -> (Vec<u32>, u64) {
    let n: usize = shape.iter().product();
    if shape.is_empty() {
        return (vec![threefry2x32(split(key), split(counter))[0]], 1);
    }
    let split_dim = shape.iter().position(|&d| d % 2 == 0).unwrap_or_else(|| {
        // The first of the largest dims.
        let max = shape.iter().copied().max().unwrap_or(0);
        shape.iter().position(|&d| d == max).unwrap_or(0)
    });
    let mut half = shape.to_vec();
    half[split_dim] = shape[split_dim].div_ceil(2);
    let n_half: usize = half.iter().product();
    // Row-major strides of the half shape.
    let mut half_strides = vec![1usize; half.len()];
    for d in (0..half.len().saturating_sub(1)).rev() {
        half_strides[d] = half_strides[d + 1] * half[d + 1];
    }
    let outputs: Vec<[u32; 2]> = (0..n_half)
        .map(|i| threefry2x32(split(key), split(counter.wrapping_add(i as u64))))
        .collect();
    let mut res = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        let mut h = 0;
        for d in 0..shape.len() {
            let c = if d == split_dim { idx[d] / 2 } else { idx[d] };
            h += c * half_strides[d];
        }
        res.push(outputs[h][idx[split_dim] % 2]);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    (res, n_half as u64)
}

/// PHILOX words: `n_words` 32-bit words from consecutive 128-bit counters, and the number
/// of counters used.
fn philox_words(key: u64, counter: (u64, u64), n_words: usize) -> (Vec<[u32; 4]>, u64) {
    let n_blocks = n_words.div_ceil(4);
    let blocks = (0..n_blocks)
        .map(|i| {
            let lo = counter.0.wrapping_add(i as u64);
            let hi = if lo < counter.0 {
                counter.1.wrapping_add(1)
            } else {
                counter.1
            };
            let [a, b] = split(lo);
            let [c, d] = split(hi);
            philox4x32(split(key), [a, b, c, d])
        })
        .collect();
    (blocks, n_blocks as u64)
}

/// Evaluates `rng_bit_generator`; returns the new state and the bits.
pub(crate) fn rng_bit_generator(cx: OpCx<'_>, state: &Literal) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(2)?;
    let algorithm = match cx.op.attr("rng_algorithm") {
        None => RngAlgorithm::Default,
        Some(Attribute::RngAlgorithm(a)) => *a,
        Some(_) => return Err(cx.invalid("`rng_algorithm` has the wrong kind")),
    };
    let state_et = state.ty.element_type;
    if state.ty.rank() != 1 || !matches!(state_et, ElementType::U64 | ElementType::S64) {
        return Err(cx.unsupported(format!(
            "state of type {}: expected a ui64 vector",
            state.ty
        )));
    }
    // The raw 64-bit words: keys use every bit, so values past `i64::MAX` must not
    // saturate as an integer read would.
    let words: Vec<u64> = state
        .data
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8-byte chunk")))
        .collect();
    let state_ty = cx.result_tensor(0)?;
    let out_ty = cx.result_tensor(1)?;
    if *state_ty != state.ty {
        return Err(cx.invalid("the output state must have the input state's type"));
    }
    let et = out_ty.element_type;
    let bits = et.bit_width();
    if !matches!(bits, 8 | 16 | 32 | 64) || et.is_complex() {
        return Err(cx.unsupported(format!("random bits of type {et}")));
    }
    let shape: Vec<usize> = out_ty.shape.iter().map(|&d| d.max(0) as usize).collect();
    let n: usize = shape.iter().product();
    let mut new_state = words.clone();
    let values: Vec<u64> = match algorithm {
        RngAlgorithm::ThreeFry => {
            if words.len() < 2 {
                return Err(cx.invalid("THREE_FRY needs a state of at least 2 words"));
            }
            let (key, counter) = (words[0], words[1]);
            if bits == 64 {
                new_state[1] = counter.wrapping_add(n as u64);
                (0..n)
                    .map(|i| {
                        let [lo, hi] =
                            threefry2x32(split(key), split(counter.wrapping_add(i as u64)));
                        u64::from(lo) | (u64::from(hi) << 32)
                    })
                    .collect()
            } else {
                let (w, advance) = threefry_words32(key, counter, &shape);
                new_state[1] = counter.wrapping_add(advance);
                w.into_iter().map(u64::from).collect()
            }
        }
        RngAlgorithm::Philox | RngAlgorithm::Default => {
            if words.len() < 2 {
                return Err(cx.invalid("PHILOX needs a state of at least 2 words"));
            }
            let key = words[0];
            let wide = words.len() >= 3;
            let counter = if wide {
                (words[1], words[2])
            } else {
                (words[1], words[0])
            };
            let n_words = if bits == 64 { 2 * n } else { n };
            let (blocks, used) = philox_words(key, counter, n_words);
            let lo = counter.0.wrapping_add(used);
            new_state[1] = lo;
            if wide && lo < counter.0 {
                new_state[2] = counter.1.wrapping_add(1);
            }
            if bits == 64 {
                blocks
                    .iter()
                    .flat_map(|b| {
                        [
                            u64::from(b[0]) | (u64::from(b[1]) << 32),
                            u64::from(b[2]) | (u64::from(b[3]) << 32),
                        ]
                    })
                    .take(n)
                    .collect()
            } else {
                blocks
                    .iter()
                    .flatten()
                    .take(n)
                    .map(|&w| u64::from(w))
                    .collect()
            }
        }
    };
    let size = et.byte_size();
    let data: Vec<u8> = values
        .iter()
        .flat_map(|v| v.to_le_bytes().into_iter().take(size))
        .collect();
    let state_data = new_state.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(vec![
        Literal::new(state.ty.clone(), state_data)?,
        Literal::new(TensorType::new(out_ty.shape.clone(), et), data)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::attrs::RngAlgorithm;
    use crate::{Attribute, ElementType, Literal, OpKind, TensorType, Type};

    fn u64s(v: &[u64]) -> Literal {
        lit_bytes(
            &[v.len() as i64],
            ElementType::U64,
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
    }

    fn words<const N: usize>(lit: &Literal) -> Vec<u64> {
        lit.data
            .chunks_exact(N)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..N].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect()
    }

    fn run(
        alg: RngAlgorithm,
        state: &[u64],
        shape: &[i64],
        et: ElementType,
    ) -> (Vec<u64>, Literal) {
        let st = u64s(state);
        let (mut b, p) = FuncBuilder::new(&[Type::Tensor(st.ty.clone())]);
        let r = b.op_full(
            OpKind::RngBitGenerator,
            &p,
            &[
                Type::Tensor(st.ty.clone()),
                Type::Tensor(TensorType::new(shape, et)),
            ],
            vec![("rng_algorithm", Attribute::RngAlgorithm(alg))],
            vec![],
        );
        let m = b.finish(&r);
        let mut out = crate::eval::run_function(&m, "main", &[st]).unwrap();
        let bits = out.remove(1);
        (words::<8>(&out[0]), bits)
    }

    // Expected values below come from JAX 0.10.2 on CPU:
    // `jax.lax.rng_bit_generator(np.array(state, np.uint64), shape, dtype, algorithm=...)`
    // with `jax_enable_x64`.

    #[test]
    fn philox_and_default_match_xla_cpu() {
        for alg in [RngAlgorithm::Philox, RngAlgorithm::Default] {
            let (state, bits) = run(alg, &[1, 2], &[5], ElementType::U32);
            assert_eq!(state, vec![1, 4]);
            assert_eq!(
                words::<4>(&bits),
                vec![0x7d34a749, 0xa9b8bbe8, 0x7ba423d7, 0x2fb324d9, 0x6cf923fe]
            );
        }
        let (state, bits) = run(
            RngAlgorithm::Philox,
            &[0x0123456789abcdef, 42],
            &[5],
            ElementType::U32,
        );
        assert_eq!(state, vec![0x0123456789abcdef, 0x2c]);
        assert_eq!(
            words::<4>(&bits),
            vec![0xe203ebe1, 0xf287f658, 0xdae0160f, 0x5db52277, 0xcd63a532]
        );
        let (_, bits) = run(RngAlgorithm::Philox, &[1, 2], &[3], ElementType::U64);
        assert_eq!(
            words::<8>(&bits),
            vec![0xa9b8bbe87d34a749, 0x2fb324d97ba423d7, 0xbadf79c36cf923fe]
        );
        let (_, bits) = run(RngAlgorithm::Philox, &[1, 2], &[2, 3], ElementType::U8);
        assert_eq!(*bits.data, vec![73, 232, 215, 217, 254, 195]);
    }

    #[test]
    fn three_fry_matches_xla_cpu() {
        let (state, bits) = run(RngAlgorithm::ThreeFry, &[1, 2], &[5], ElementType::U32);
        assert_eq!(state, vec![1, 5]);
        assert_eq!(
            words::<4>(&bits),
            vec![0x0296e954, 0x802fd53b, 0xed3492d3, 0xdf435003, 0x63b40bd3]
        );
        let (state, bits) = run(
            RngAlgorithm::ThreeFry,
            &[0x0123456789abcdef, 42],
            &[5],
            ElementType::U32,
        );
        assert_eq!(state, vec![0x0123456789abcdef, 0x2d]);
        assert_eq!(
            words::<4>(&bits),
            vec![0x892c25c1, 0x93887604, 0x02e2c389, 0x7403a6bb, 0xf72baafd]
        );
        let (state, bits) = run(RngAlgorithm::ThreeFry, &[1, 2], &[3], ElementType::U64);
        assert_eq!(state, vec![1, 5]);
        assert_eq!(
            words::<8>(&bits),
            vec![0x802fd53b0296e954, 0xdf435003ed3492d3, 0xfcc0f26163b40bd3]
        );
        let (_, bits) = run(RngAlgorithm::ThreeFry, &[1, 2], &[2, 3], ElementType::U8);
        assert_eq!(*bits.data, vec![84, 211, 211, 59, 3, 97]);
    }

    #[test]
    fn states_past_i64_max_keep_every_bit() {
        // JAX's rbg keys fill all 64 bits of each word; counters wrap.
        let state = [0xfedc_ba98_7654_3210, u64::MAX];
        let (new, bits) = run(RngAlgorithm::Philox, &state, &[5], ElementType::U32);
        assert_eq!(new, vec![0xfedc_ba98_7654_3210, 1]);
        assert_eq!(
            words::<4>(&bits),
            vec![0x4ad744b0, 0x15d9298b, 0x2467d02e, 0xba94882d, 0xa8448461]
        );
        let (new, bits) = run(RngAlgorithm::ThreeFry, &state, &[5], ElementType::U32);
        assert_eq!(new, vec![0xfedc_ba98_7654_3210, 2]);
        assert_eq!(
            words::<4>(&bits),
            vec![0x54dff42d, 0x22693238, 0x269d32df, 0x244c93fa, 0xa392f4d1]
        );
    }

    #[test]
    fn a_non_u64_state_is_an_error() {
        let st = i32s(&[2], &[1, 2]);
        let (mut b, p) = FuncBuilder::new(&[Type::Tensor(st.ty.clone())]);
        let r = b.op_full(
            OpKind::RngBitGenerator,
            &p,
            &[Type::Tensor(st.ty.clone()), t(&[2], ElementType::U32)],
            vec![],
            vec![],
        );
        let m = b.finish(&r);
        assert!(crate::eval::run_function(&m, "main", &[st]).is_err());
    }
}
