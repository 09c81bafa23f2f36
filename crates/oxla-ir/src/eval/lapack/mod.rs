//! The `lapack_*_ffi` custom calls that JAX's cpu lowering rules emit for linear algebra.
//!
//! JAX lowers `cholesky`, `lu`, `qr`, `eigh`, `svd`, `eig`, `schur`, `hessenberg` and
//! `tridiagonal` for its cpu platform to typed-FFI custom calls named after the LAPACK routine
//! (`lapack_spotrf_ffi`, `lapack_zgesdd_ffi`, ...) and post-processes their outputs: packed
//! factors, 1-based pivots, Householder scalars, an `info` code per matrix. The oxla Python
//! package installs those cpu rules for oxla, so this module implements the targets with the
//! outputs LAPACK defines: `potrf`, `getrf`, `geqrf`, `geqp3`, `orgqr`/`ungqr`,
//! `syevd`/`heevd`, `gesdd`, `gehrd`, `sytrd`/`hetrd` (either triangle), `geev`, `gees` and
//! `trsm` (the triangular solve of `triangular_solve`'s evaluator, which JAX's cpu rules
//! call for it, so programs exported for `cpu` run too), each for f32, f64, complex<f32>
//! and complex<f64>.
//!
//! Matrices are read and written as logical (row-major) tensors: the column-major
//! `operand_layouts`/`result_layouts` JAX attaches only describe the physical buffers of a
//! LAPACK call, not the values. Leading dimensions are batch dimensions. On real f32/f64
//! matrices `potrf`, `getrf`, `geqrf` (tall or square, full rank), `orgqr`, `syevd`, `gesdd`
//! and `trsm` run [`super::dense`]'s blocked kernels in the matrices' own precision, and so
//! does `geev` of every type (but complex 2x2 matrices), falling back to the general path where LAPACK's answer depends on details
//! of the algorithm (a failing pivot, non-finite entries). `gees` takes LAPACK's own steps
//! ([`schur`]), real matrices in their own precision, since a Schur form's eigenvalue order
//! and column signs depend on them, complex ones in f64. The general path computes in `complex<f64>` whatever the
//! element type (real data stays real: every operation on it keeps a zero imaginary part)
//! and rounds once to the result type. Attributes come from the `mhlo.backend_config` dictionary (`uplo`, `mode`,
//! ... as `ui8` characters). Where LAPACK leaves a choice open (the order of a Schur form's
//! or `geev`'s eigenvalues, the phase of eigen- and singular vectors) only LAPACK itself gives
//! LAPACK's answer: a host process can lend its routines (`lent`: inside Python, SciPy's,
//! the ones JAX's cpu backend runs), and `gees`, `syevd`/`heevd`, `gesdd`, `gesvd` and `geev`
//! then call them. Without them the results are valid but may differ from LAPACK's in that
//! order and those phases.

mod lent;
mod non_finite;
mod schur;

pub use lent::{
    lend_lapack, lent_lapack, ComplexGees, ComplexGeev, LapackElement, LapackReal, LentLapack,
    RealGees, RealGeev, Svd, Syevd,
};

use super::context::OpCx;
use super::convert::convert_array;
use super::dense;
use super::element::{decode, encode, Array};
use super::typed::{to_bytes, view_bytes};
use crate::{Attribute, ElementType, IrError, Literal, Op, TensorType};
use num_complex::{Complex, Complex64};

type C = Complex64;

const ZERO: C = C::new(0.0, 0.0);
const ONE: C = C::new(1.0, 0.0);

/// Most Jacobi sweeps before giving up (they converge quadratically, in well under 20).
const MAX_SWEEPS: usize = 80;

/// The LAPACK routines implemented here (the target name without type letter and `_ffi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Routine {
    Potrf,
    Getrf,
    Geqrf,
    Orgqr,
    Syevd,
    Gesdd,
    Gehrd,
    Geev,
    Gees,
    Geqp3,
    Sytrd,
    Trsm,
}

/// Splits `lapack_<t><routine>_ffi` into its element type and routine.
fn parse_target(target: &str) -> Option<(ElementType, Routine)> {
    let rest = target.strip_prefix("lapack_")?.strip_suffix("_ffi")?;
    let mut chars = rest.chars();
    let letter = chars.next()?;
    let name = chars.as_str();
    let et = match letter {
        's' => ElementType::F32,
        'd' => ElementType::F64,
        'c' => ElementType::C64,
        'z' => ElementType::C128,
        _ => return None,
    };
    let complex = matches!(letter, 'c' | 'z');
    let routine = match name {
        "potrf" => Routine::Potrf,
        "getrf" => Routine::Getrf,
        "geqrf" => Routine::Geqrf,
        "orgqr" if !complex => Routine::Orgqr,
        "ungqr" if complex => Routine::Orgqr,
        "syevd" if !complex => Routine::Syevd,
        "heevd" if complex => Routine::Syevd,
        // JAX's `SvdAlgorithm.QR` asks for `gesvd`; it takes and returns what `gesdd`
        // does, and the decomposition is the same one.
        "gesdd" | "gesvd" => Routine::Gesdd,
        "gehrd" => Routine::Gehrd,
        "geev" => Routine::Geev,
        "gees" => Routine::Gees,
        "geqp3" => Routine::Geqp3,
        "sytrd" if !complex => Routine::Sytrd,
        "hetrd" if complex => Routine::Sytrd,
        "trsm" => Routine::Trsm,
        _ => return None,
    };
    Some((et, routine))
}

/// Whether `op` is a custom call this module implements.
pub(crate) fn supports(op: &Op) -> bool {
    super::call_target(op).and_then(parse_target).is_some()
}

/// A `ui8`/integer attribute of the backend config: `mhlo.backend_config` as a dictionary
/// (or its printed form), or `backend_config` when it is a dictionary.
fn config_int(cx: OpCx<'_>, name: &str) -> Result<Option<i64>, IrError> {
    for holder in ["mhlo.backend_config", "backend_config"] {
        match cx.op.attr(holder) {
            Some(Attribute::Dictionary(entries)) => {
                if let Some((_, value)) = entries.iter().find(|(n, _)| n == name) {
                    return value
                        .as_int()
                        .and_then(|v| i64::try_from(v).ok())
                        .map(Some)
                        .ok_or_else(|| {
                            cx.invalid(format!("backend config `{name}` is not an integer"))
                        });
                }
            }
            Some(Attribute::Opaque(text)) => {
                if let Some(v) = opaque_int(text, name) {
                    return Ok(Some(v));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Reads `name = 85 : ui8` out of a printed dictionary `{mode = 85 : ui8, uplo = 76 : ui8}`.
fn opaque_int(text: &str, name: &str) -> Option<i64> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    inner.split(',').find_map(|entry| {
        let (key, value) = entry.split_once('=')?;
        if key.trim().trim_matches('"') != name {
            return None;
        }
        let number = value.split(':').next()?.trim();
        number.parse::<i64>().ok()
    })
}

/// A character attribute (`uplo`, `mode`), with `default` when absent.
fn config_char(cx: OpCx<'_>, name: &str, default: char, allowed: &str) -> Result<char, IrError> {
    let c = match config_int(cx, name)? {
        None => default,
        Some(v) => u8::try_from(v)
            .map(char::from)
            .map_err(|_| cx.invalid(format!("backend config `{name}` = {v} is not a character")))?,
    };
    if !allowed.contains(c) {
        return Err(cx.invalid(format!(
            "backend config `{name}` = '{c}' is not one of \"{allowed}\""
        )));
    }
    Ok(c)
}

/// Decodes a float or complex literal into `complex<f64>`.
pub(super) fn to_complex(cx: OpCx<'_>, lit: &Literal) -> Result<Vec<C>, IrError> {
    match convert_array(&decode(lit), ElementType::C128) {
        Array::C128(v) => Ok(v),
        _ => Err(cx.invalid("internal: complex conversion failed")),
    }
}

/// Encodes `values` as a literal of `ty`, rounding once.
pub(super) fn from_complex(values: Vec<C>, ty: &TensorType) -> Result<Literal, IrError> {
    encode(
        &convert_array(&Array::C128(values), ty.element_type),
        ty.clone(),
    )
}

pub(super) fn from_i32(values: Vec<i32>, ty: &TensorType) -> Result<Literal, IrError> {
    encode(&Array::S32(values), ty.clone())
}

/// The real type of the same precision as `et`.
pub(super) fn real_of(et: ElementType) -> ElementType {
    match et {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        other => other,
    }
}

/// Checks that result `i` has `shape` and element type `et`, and returns its type.
pub(super) fn expect_result<'a>(
    cx: OpCx<'a>,
    i: usize,
    shape: &[i64],
    et: ElementType,
) -> Result<&'a TensorType, IrError> {
    let ty = cx.result_tensor(i)?;
    if ty.shape != shape || ty.element_type != et {
        return Err(cx.invalid(format!(
            "result {i} must be tensor<{}{et}>, got {ty}",
            shape.iter().map(|d| format!("{d}x")).collect::<String>()
        )));
    }
    Ok(ty)
}

/// `shape[..r-2]`, the batch count and the matrix dimensions of a `[..., m, n]` operand.
fn matrix_dims(cx: OpCx<'_>, ty: &TensorType) -> Result<(Vec<i64>, usize, usize, usize), IrError> {
    let r = ty.rank();
    if r < 2 || !ty.is_static() {
        return Err(cx.invalid(format!("{ty} is not a static batch of matrices")));
    }
    let batch_dims = ty.shape[..r - 2].to_vec();
    let batch = batch_dims.iter().map(|&d| d.max(0) as usize).product();
    Ok((
        batch_dims,
        batch,
        ty.shape[r - 2].max(0) as usize,
        ty.shape[r - 1].max(0) as usize,
    ))
}

fn with(dims: &[i64], tail: &[usize]) -> Vec<i64> {
    dims.iter()
        .copied()
        .chain(tail.iter().map(|&d| d as i64))
        .collect()
}

/// `$f::<f32>(..)` or `$f::<f64>(..)` for a real `$et`: a fast path's answer, `None` for
/// complex element types.
macro_rules! on_real {
    ($et:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $et {
            ElementType::F32 => $f::<f32>($($arg),*),
            ElementType::F64 => $f::<f64>($($arg),*),
            _ => None,
        }
    };
}

/// A literal of `ty` holding `values`.
fn real_literal<T: dense::Real>(values: &[T], ty: &TensorType) -> Option<Literal> {
    Literal::new(ty.clone(), to_bytes(values)).ok()
}

/// The `batch` matrices of `size` elements of `a` and a mutable copy, when every
/// `step(matrix, copy)` succeeds.
fn each_matrix<T: dense::Real>(
    a: &Literal,
    batch: usize,
    size: usize,
    mut step: impl FnMut(&[T], &mut [T]) -> Option<()>,
) -> Option<Vec<T>> {
    let values = view_bytes::<T>(&a.data);
    let mut out = values.to_vec();
    for b in 0..batch {
        let at = b * size..(b + 1) * size;
        step(&values[at.clone()], &mut out[at])?;
    }
    Some(out)
}

fn potrf_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    n: usize,
    lower: bool,
    ty: &TensorType,
) -> Option<Literal> {
    let out = each_matrix::<T>(a, batch, n * n, |x, out| dense::cholesky(x, n, lower, out))?;
    real_literal(&out, ty)
}

fn getrf_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    m: usize,
    n: usize,
    ty: &TensorType,
) -> Option<(Literal, Vec<i32>)> {
    let mut pivots = Vec::with_capacity(batch * m.min(n));
    let out = each_matrix::<T>(a, batch, m * n, |_, out| {
        pivots.extend(dense::lu(out, m, n)?);
        Some(())
    })?;
    Some((real_literal(&out, ty)?, pivots))
}

fn syevd_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    n: usize,
    lower: bool,
    vectors: bool,
    v_ty: &TensorType,
    w_ty: &TensorType,
) -> Option<(Literal, Literal)> {
    let mut ws = Vec::with_capacity(batch * n);
    let vs = each_matrix::<T>(a, batch, n * n, |x, out| {
        let (w, v) = dense::eigh(x, n, lower, vectors)?;
        ws.extend(w);
        if vectors {
            out.copy_from_slice(&v);
        }
        Some(())
    })?;
    Some((real_literal(&vs, v_ty)?, real_literal(&ws, w_ty)?))
}

/// `gesdd` on real matrices: the singular values, `U` and `V^T` (zeros without vectors,
/// the placeholders' sizes).
fn gesdd_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    m: usize,
    n: usize,
    mode: char,
    [s_ty, u_ty, vt_ty]: [&TensorType; 3],
) -> Option<(Literal, Literal, Literal)> {
    let values = view_bytes::<T>(&a.data);
    let (u_len, vt_len) = (u_ty.num_elements()?, vt_ty.num_elements()?);
    let mut ss = Vec::with_capacity(batch * m.min(n));
    let (mut us, mut vts) = (Vec::with_capacity(u_len), Vec::with_capacity(vt_len));
    for b in 0..batch {
        let (s, u, vt) = dense::svd(&values[b * m * n..(b + 1) * m * n], m, n, mode)?;
        ss.extend(s);
        us.extend(u);
        vts.extend(vt);
    }
    if mode == 'N' {
        us = vec![T::default(); u_len];
        vts = vec![T::default(); vt_len];
    }
    Some((
        real_literal(&ss, s_ty)?,
        real_literal(&us, u_ty)?,
        real_literal(&vts, vt_ty)?,
    ))
}

/// The custom call's target name and what `parse` makes of it; an error when it has none
/// or `parse` does not know it.
pub(super) fn known_target<'a, T>(
    cx: OpCx<'a>,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<(&'a str, T), IrError> {
    let target =
        super::call_target(cx.op).ok_or_else(|| cx.invalid("missing `call_target_name`"))?;
    let known = parse(target).ok_or_else(|| {
        cx.unsupported(format!("custom call target `{target}` is not implemented"))
    })?;
    Ok((target, known))
}

/// Evaluates a `stablehlo.custom_call` whose target is one of the LAPACK routines.
pub(crate) fn custom_call(cx: OpCx<'_>, args: &[&Literal]) -> Result<Vec<Literal>, IrError> {
    let (target, (et, routine)) = known_target(cx, parse_target)?;
    let operands = if matches!(routine, Routine::Orgqr | Routine::Geqp3 | Routine::Trsm) {
        2
    } else {
        1
    };
    cx.expect_operands(operands)?;
    let a = args[0];
    if a.ty.element_type != et {
        return Err(cx.invalid(format!("`{target}` takes {et} matrices, got {}", a.ty)));
    }
    let (batch_dims, batch, m, n) = matrix_dims(cx, &a.ty)?;
    // The routines with a fast path for real matrices decode the operand themselves.
    let values = || to_complex(cx, a);
    match routine {
        Routine::Potrf => potrf_call(cx, a, &batch_dims, batch, m, n, et),
        Routine::Getrf => getrf_call(cx, a, &batch_dims, batch, m, n, et),
        Routine::Syevd => syevd_call(cx, a, &batch_dims, batch, m, n, et),
        Routine::Gesdd => {
            let qr = target.ends_with("gesvd_ffi");
            gesdd_call(cx, a, &batch_dims, batch, m, n, et, qr)
        }
        Routine::Geqrf => geqrf_call(cx, a, &batch_dims, batch, m, n, et),
        Routine::Orgqr => orgqr_call(cx, a, args[1], &batch_dims, batch, m, n, et),
        Routine::Gehrd => gehrd_call(cx, &values()?, &batch_dims, batch, m, n, et),
        Routine::Geev => geev_call(cx, a, &batch_dims, batch, m, n, et),
        Routine::Gees => gees_call(cx, &values()?, &batch_dims, batch, m, n, et),
        Routine::Geqp3 => geqp3_call(cx, &values()?, args[1], &batch_dims, batch, m, n, et),
        Routine::Sytrd => sytrd_call(cx, &values()?, &batch_dims, batch, m, n, et),
        Routine::Trsm => trsm_call(cx, args),
    }
}

/// `trsm`: the triangular solve `op(a) x = alpha b` (or `x op(a) = alpha b`), from operands
/// `a` and `b` (JAX passes no `alpha`: it is one) and the characters `side`, `uplo`,
/// `trans_x` and `diag` of the backend config; the result takes `b`'s place.
fn trsm_call(cx: OpCx<'_>, args: &[&Literal]) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(1)?;
    let solve = super::linalg::TriangularSolve {
        left: config_char(cx, "side", 'L', "LR")? == 'L',
        lower: config_char(cx, "uplo", 'L', "LU")? == 'L',
        unit: config_char(cx, "diag", 'N', "NU")? == 'U',
        transpose: match config_char(cx, "trans_x", 'N', "NTC")? {
            'N' => crate::attrs::Transpose::NoTranspose,
            'T' => crate::attrs::Transpose::Transpose,
            _ => crate::attrs::Transpose::Adjoint,
        },
    };
    Ok(vec![super::linalg::solve_triangular(
        cx, args[0], args[1], &solve,
    )?])
}

fn potrf_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(2)?;
    if m != n {
        return Err(cx.invalid("potrf needs square matrices"));
    }
    let lower = config_char(cx, "uplo", 'L', "LU")? == 'L';
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[n, n]), et)?;
    let info_ty = expect_result(cx, 1, batch_dims, ElementType::S32)?;
    if let Some(factor) = on_real!(et, potrf_real(a, batch, n, lower, a_ty)) {
        return Ok(vec![factor, from_i32(vec![0; batch], info_ty)?]);
    }
    let mut out = to_complex(cx, a)?;
    let mut infos = Vec::with_capacity(batch);
    for b in 0..batch {
        infos.push(potrf(&mut out[b * n * n..(b + 1) * n * n], n, lower));
    }
    Ok(vec![from_complex(out, a_ty)?, from_i32(infos, info_ty)?])
}

fn getrf_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(3)?;
    let k = m.min(n);
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[m, n]), et)?;
    let piv_ty = expect_result(cx, 1, &with(batch_dims, &[k]), ElementType::S32)?;
    let info_ty = expect_result(cx, 2, batch_dims, ElementType::S32)?;
    if let Some((factors, pivots)) = on_real!(et, getrf_real(a, batch, m, n, a_ty)) {
        return Ok(vec![
            factors,
            from_i32(pivots, piv_ty)?,
            from_i32(vec![0; batch], info_ty)?,
        ]);
    }
    let mut out = to_complex(cx, a)?;
    let mut pivots = Vec::with_capacity(batch * k);
    let mut infos = Vec::with_capacity(batch);
    for b in 0..batch {
        let (piv, info) = getrf(&mut out[b * m * n..(b + 1) * m * n], m, n);
        pivots.extend(piv);
        infos.push(info);
    }
    Ok(vec![
        from_complex(out, a_ty)?,
        from_i32(pivots, piv_ty)?,
        from_i32(infos, info_ty)?,
    ])
}

fn geqrf_real<T: dense::Real>(
    a: &Literal,
    batch: usize,
    m: usize,
    n: usize,
    [a_ty, tau_ty]: [&TensorType; 2],
) -> Option<(Literal, Literal)> {
    let mut taus = Vec::with_capacity(batch * m.min(n));
    let out = each_matrix::<T>(a, batch, m * n, |_, out| {
        taus.extend(dense::qr(out, m, n)?);
        Some(())
    })?;
    Some((real_literal(&out, a_ty)?, real_literal(&taus, tau_ty)?))
}

fn orgqr_real<T: dense::Real>(
    a: &Literal,
    taus: &Literal,
    batch: usize,
    [m, n, k]: [usize; 3],
    ty: &TensorType,
) -> Option<Literal> {
    let values = view_bytes::<T>(&a.data);
    let tau_values = view_bytes::<T>(&taus.data);
    let mut out = Vec::with_capacity(batch * m * n);
    for b in 0..batch {
        out.extend(dense::householder_product(
            &values[b * m * n..(b + 1) * m * n],
            &tau_values[b * k..(b + 1) * k],
            m,
            n,
        )?);
    }
    real_literal(&out, ty)
}

fn geqrf_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(2)?;
    let k = m.min(n);
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[m, n]), et)?;
    let tau_ty = expect_result(cx, 1, &with(batch_dims, &[k]), et)?;
    if let Some((out, taus)) = on_real!(et, geqrf_real(a, batch, m, n, [a_ty, tau_ty])) {
        return Ok(vec![out, taus]);
    }
    let mut out = to_complex(cx, a)?;
    let mut taus = Vec::with_capacity(batch * k);
    for b in 0..batch {
        taus.extend(geqrf(&mut out[b * m * n..(b + 1) * m * n], m, n));
    }
    Ok(vec![from_complex(out, a_ty)?, from_complex(taus, tau_ty)?])
}

#[allow(clippy::too_many_arguments)]
fn orgqr_call(
    cx: OpCx<'_>,
    a: &Literal,
    taus: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(1)?;
    let r = taus.ty.rank();
    if taus.ty.element_type != et
        || r != batch_dims.len() + 1
        || taus.ty.shape[..r - 1] != *batch_dims
    {
        return Err(cx.invalid(format!(
            "the Householder scalars must be {et} with the batch dimensions {batch_dims:?} plus one, got {}",
            taus.ty
        )));
    }
    let k = taus.ty.shape[r - 1].max(0) as usize;
    if m < n || k > n {
        return Err(cx.invalid(format!(
            "orgqr needs rows >= columns >= reflectors, got {m}x{n} with {k}"
        )));
    }
    let out_ty = expect_result(cx, 0, &with(batch_dims, &[m, n]), et)?;
    if let Some(out) = on_real!(et, orgqr_real(a, taus, batch, [m, n, k], out_ty)) {
        return Ok(vec![out]);
    }
    let values = to_complex(cx, a)?;
    let tau_values = to_complex(cx, taus)?;
    let mut out = Vec::with_capacity(batch * m * n);
    for b in 0..batch {
        out.extend(orgqr(
            &values[b * m * n..(b + 1) * m * n],
            &tau_values[b * k..(b + 1) * k],
            m,
            n,
        ));
    }
    Ok(vec![from_complex(out, out_ty)?])
}

fn syevd_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(3)?;
    if m != n {
        return Err(cx.invalid("syevd needs square matrices"));
    }
    let lower = config_char(cx, "uplo", 'L', "LU")? == 'L';
    let vectors = config_char(cx, "mode", 'V', "VN")? == 'V';
    let v_ty = expect_result(cx, 0, &with(batch_dims, &[n, n]), et)?;
    let w_ty = expect_result(cx, 1, &with(batch_dims, &[n]), real_of(et))?;
    let info_ty = expect_result(cx, 2, batch_dims, ElementType::S32)?;
    let lapack = lent::lent_lapack();
    let (flags, types) = ([lower, vectors], [v_ty, w_ty, info_ty]);
    let lent = match et {
        ElementType::F32 => lent::syevd(lapack.ssyevd.as_deref(), a, batch, n, flags, types),
        ElementType::F64 => lent::syevd(lapack.dsyevd.as_deref(), a, batch, n, flags, types),
        ElementType::C64 => lent::syevd(lapack.cheevd.as_deref(), a, batch, n, flags, types),
        ElementType::C128 => lent::syevd(lapack.zheevd.as_deref(), a, batch, n, flags, types),
        _ => None,
    };
    if let Some(out) = lent {
        return Ok(out);
    }
    // LAPACK's answer to a non-finite matrix is its own; oxla's routines give NaNs.
    let bad = non_finite::matrices(a, batch, n, n, Some(lower));
    let clean = non_finite::zeroed(a, &bad);
    let mut out = syevd_own(
        cx,
        &clean,
        batch,
        n,
        [lower, vectors],
        [v_ty, w_ty, info_ty],
    )?;
    non_finite::poison(&mut out, &bad, &[0, 1], 2);
    Ok(out)
}

/// oxla's own `syevd`/`heevd` (faer on real matrices, Jacobi rotations otherwise).
fn syevd_own(
    cx: OpCx<'_>,
    a: &Literal,
    batch: usize,
    n: usize,
    [lower, vectors]: [bool; 2],
    [v_ty, w_ty, info_ty]: [&TensorType; 3],
) -> Result<Vec<Literal>, IrError> {
    if let Some((v, w)) = on_real!(
        a.element_type(),
        syevd_real(a, batch, n, lower, vectors, v_ty, w_ty)
    ) {
        return Ok(vec![v, w, from_i32(vec![0; batch], info_ty)?]);
    }
    let values = &to_complex(cx, a)?;
    let mut vs = Vec::with_capacity(batch * n * n);
    let mut ws = Vec::with_capacity(batch * n);
    for b in 0..batch {
        let (w, v) = eigh(&values[b * n * n..(b + 1) * n * n], n, lower);
        ws.extend(w.into_iter().map(|x| C::new(x, 0.0)));
        if vectors {
            vs.extend(v);
        } else {
            vs.extend_from_slice(&values[b * n * n..(b + 1) * n * n]);
        }
    }
    Ok(vec![
        from_complex(vs, v_ty)?,
        from_complex(ws, w_ty)?,
        from_i32(vec![0; batch], info_ty)?,
    ])
}

/// `gesdd`, or `gesvd` with `qr` (the same decomposition; a lent `gesvd` runs for it).
#[allow(clippy::too_many_arguments)]
fn gesdd_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
    qr: bool,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(5)?;
    let mode = config_char(cx, "mode", 'A', "ASN")?;
    let k = m.min(n);
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[m, n]), et)?;
    let s_ty = expect_result(cx, 1, &with(batch_dims, &[k]), real_of(et))?;
    // Without vectors, the U and Vt buffers are placeholders of JAX's choosing.
    let (u_ty, vt_ty) = (cx.result_tensor(2)?, cx.result_tensor(3)?);
    let (u_cols, vt_rows) = match mode {
        'A' => (m, n),
        'S' => (k, k),
        _ => (0, 0),
    };
    if mode != 'N' {
        expect_result(cx, 2, &with(batch_dims, &[m, u_cols]), et)?;
        expect_result(cx, 3, &with(batch_dims, &[vt_rows, n]), et)?;
    }
    let info_ty = expect_result(cx, 4, batch_dims, ElementType::S32)?;
    let shape = lent::SvdShape {
        m,
        n,
        mode,
        u_cols,
        vt_rows,
    };
    let types = [a_ty, s_ty, u_ty, vt_ty, info_ty];
    // A non-finite matrix has no decomposition: NaNs, as LAPACK's `info` makes them on `cpu`.
    let bad = non_finite::matrices(a, batch, m, n, None);
    let clean = non_finite::zeroed(a, &bad);
    let mut out = gesdd_any(cx, &clean, batch, shape, types, qr)?;
    let poisoned: &[usize] = if mode == 'N' { &[0, 1] } else { &[0, 1, 2, 3] };
    non_finite::poison(&mut out, &bad, poisoned, 4);
    Ok(out)
}

/// `gesdd` (or `gesvd` with `qr`) of matrices with finite entries: the lent routine, or
/// oxla's own (faer on real matrices, Jacobi rotations otherwise).
fn gesdd_any(
    cx: OpCx<'_>,
    a: &Literal,
    batch: usize,
    shape: lent::SvdShape,
    types: [&TensorType; 5],
    qr: bool,
) -> Result<Vec<Literal>, IrError> {
    let lent::SvdShape {
        m,
        n,
        mode,
        u_cols,
        vt_rows,
    } = shape;
    let [a_ty, s_ty, u_ty, vt_ty, info_ty] = types;
    let (et, k) = (a.element_type(), m.min(n));
    let (u_len, vt_len) = (
        u_ty.num_elements().unwrap_or(0),
        vt_ty.num_elements().unwrap_or(0),
    );
    let lapack = lent::lent_lapack();
    let lent = match et {
        ElementType::F32 => {
            let routine = if qr { &lapack.sgesvd } else { &lapack.sgesdd };
            lent::svd(routine.as_deref(), a, batch, shape, types)
        }
        ElementType::F64 => {
            let routine = if qr { &lapack.dgesvd } else { &lapack.dgesdd };
            lent::svd(routine.as_deref(), a, batch, shape, types)
        }
        ElementType::C64 => {
            let routine = if qr { &lapack.cgesvd } else { &lapack.cgesdd };
            lent::svd(routine.as_deref(), a, batch, shape, types)
        }
        ElementType::C128 => {
            let routine = if qr { &lapack.zgesvd } else { &lapack.zgesdd };
            lent::svd(routine.as_deref(), a, batch, shape, types)
        }
        _ => None,
    };
    if let Some(out) = lent {
        return Ok(out);
    }
    if let Some((s, u, vt)) = on_real!(et, gesdd_real(a, batch, m, n, mode, [s_ty, u_ty, vt_ty])) {
        return Ok(vec![
            a.clone(),
            s,
            u,
            vt,
            from_i32(vec![0; batch], info_ty)?,
        ]);
    }
    let values = &to_complex(cx, a)?;
    let mut ss = Vec::with_capacity(batch * k);
    let mut us = Vec::with_capacity(u_len);
    let mut vts = Vec::with_capacity(vt_len);
    for b in 0..batch {
        let (s, u, v) = svd(&values[b * m * n..(b + 1) * m * n], m, n, mode == 'A');
        ss.extend(s.into_iter().map(|x| C::new(x, 0.0)));
        if mode == 'N' {
            continue;
        }
        let (u_stride, v_stride) = (u.len() / m.max(1), v.len() / n.max(1));
        for i in 0..m {
            us.extend_from_slice(&u[i * u_stride..i * u_stride + u_cols]);
        }
        for i in 0..vt_rows {
            vts.extend((0..n).map(|j| v[j * v_stride + i].conj()));
        }
    }
    if mode == 'N' {
        us = vec![ZERO; u_len];
        vts = vec![ZERO; vt_len];
    }
    Ok(vec![
        from_complex(values.to_vec(), a_ty)?,
        from_complex(ss, s_ty)?,
        from_complex(us, u_ty)?,
        from_complex(vts, vt_ty)?,
        from_i32(vec![0; batch], info_ty)?,
    ])
}

fn gehrd_call(
    cx: OpCx<'_>,
    values: &[C],
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(3)?;
    if m != n {
        return Err(cx.invalid("gehrd needs square matrices"));
    }
    let low = config_int(cx, "low")?.unwrap_or(1);
    let high = config_int(cx, "high")?.unwrap_or(n as i64);
    if low != 1 || high != n as i64 {
        return Err(cx.unsupported(format!(
            "gehrd with low = {low}, high = {high} (only 1 and {n} are implemented)"
        )));
    }
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[n, n]), et)?;
    let tau_ty = expect_result(cx, 1, &with(batch_dims, &[n.saturating_sub(1)]), et)?;
    let info_ty = expect_result(cx, 2, batch_dims, ElementType::S32)?;
    let mut out = values.to_vec();
    let mut taus = Vec::with_capacity(batch * n);
    for b in 0..batch {
        taus.extend(gehrd(&mut out[b * n * n..(b + 1) * n * n], n));
    }
    Ok(vec![
        from_complex(out, a_ty)?,
        from_complex(taus, tau_ty)?,
        from_i32(vec![0; batch], info_ty)?,
    ])
}

/// The complex type of the same precision as `et`.
fn complex_of(et: ElementType) -> ElementType {
    match et {
        ElementType::F32 => ElementType::C64,
        ElementType::F64 => ElementType::C128,
        other => other,
    }
}

/// `geev` on `faer` for every matrix of `a`: the eigenvalues and the left and right
/// eigenvectors (zeros where not asked for); `None` where the general path must answer.
fn geev_fast<T: dense::Real>(
    a: &Literal,
    batch: usize,
    n: usize,
    left: bool,
    right: bool,
) -> Option<[Vec<Complex<T>>; 3]>
where
    Complex<T>: faer::traits::ComplexField<Real = T>,
{
    let flat = view_bytes::<T>(&a.data);
    let complex = a.ty.element_type.is_complex();
    let size = n * n;
    let mut out = [Vec::new(), Vec::new(), Vec::new()];
    for b in 0..batch {
        let eig = if complex {
            let m: Vec<Complex<T>> = flat[2 * b * size..2 * (b + 1) * size]
                .chunks_exact(2)
                .map(|z| Complex::new(z[0], z[1]))
                .collect();
            dense::eig_complex(&m, n, left, right)?
        } else {
            dense::eig_real(&flat[b * size..(b + 1) * size], n, left, right)?
        };
        let zeros = || vec![Complex::new(T::default(), T::default()); size];
        out[0].extend(eig.values);
        out[1].extend(if left { eig.left } else { zeros() });
        out[2].extend(if right { eig.right } else { zeros() });
    }
    Some(out)
}

/// `geev_fast`'s answer as the call's results, `w` split into real and imaginary parts for
/// real matrices.
fn geev_fast_results<T: dense::Real>(
    a: &Literal,
    batch: usize,
    n: usize,
    [left, right]: [bool; 2],
    tys: &[&TensorType],
    info_ty: &TensorType,
) -> Option<Vec<Literal>>
where
    Complex<T>: faer::traits::ComplexField<Real = T>,
{
    let [w, vl, vr] = geev_fast::<T>(a, batch, n, left, right)?;
    let interleave = |v: &[Complex<T>]| -> Vec<T> { v.iter().flat_map(|z| [z.re, z.im]).collect() };
    let mut out = Vec::new();
    if a.ty.element_type.is_complex() {
        out.push(real_literal(&interleave(&w), tys[0])?);
    } else {
        out.push(real_literal(
            &w.iter().map(|z| z.re).collect::<Vec<_>>(),
            tys[0],
        )?);
        out.push(real_literal(
            &w.iter().map(|z| z.im).collect::<Vec<_>>(),
            tys[1],
        )?);
    }
    let last = tys.len();
    out.push(real_literal(&interleave(&vl), tys[last - 2])?);
    out.push(real_literal(&interleave(&vr), tys[last - 1])?);
    out.push(from_i32(vec![0; batch], info_ty).ok()?);
    Some(out)
}

fn geev_call(
    cx: OpCx<'_>,
    a: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    let real = !et.is_complex();
    cx.expect_results(if real { 5 } else { 4 })?;
    if m != n {
        return Err(cx.invalid("geev needs square matrices"));
    }
    let left = config_char(cx, "compute_left", 'N', "VN")? == 'V';
    let right = config_char(cx, "compute_right", 'N', "VN")? == 'V';
    let mut tys = Vec::new();
    let w_count = if real { 2 } else { 1 };
    for i in 0..w_count {
        tys.push(expect_result(cx, i, &with(batch_dims, &[n]), et)?);
    }
    let v_shape = with(batch_dims, &[n, n]);
    tys.push(expect_result(cx, w_count, &v_shape, complex_of(et))?);
    tys.push(expect_result(cx, w_count + 1, &v_shape, complex_of(et))?);
    let info_ty = expect_result(cx, w_count + 2, batch_dims, ElementType::S32)?;
    let wants = [left, right];
    let lapack = lent::lent_lapack();
    let all: Vec<&TensorType> = tys.iter().copied().chain([info_ty]).collect();
    let lent = match et {
        ElementType::F32 => lent::real_geev(lapack.sgeev.as_deref(), a, batch, n, wants, &all),
        ElementType::F64 => lent::real_geev(lapack.dgeev.as_deref(), a, batch, n, wants, &all),
        ElementType::C64 => lent::complex_geev(lapack.cgeev.as_deref(), a, batch, n, wants, &all),
        ElementType::C128 => lent::complex_geev(lapack.zgeev.as_deref(), a, batch, n, wants, &all),
        _ => None,
    };
    if let Some(out) = lent {
        return Ok(out);
    }
    // A complex 2x2 matrix's two eigenvalues come in the order of LAPACK's first shift,
    // which the general path follows (`rsf2csf` rotates each block by the first); faer's
    // iteration may return them the other way round.
    let fast = match et {
        _ if !real && n <= 2 => None,
        ElementType::F32 | ElementType::C64 => {
            geev_fast_results::<f32>(a, batch, n, wants, &tys, info_ty)
        }
        ElementType::F64 | ElementType::C128 => {
            geev_fast_results::<f64>(a, batch, n, wants, &tys, info_ty)
        }
        _ => None,
    };
    if let Some(out) = fast {
        return Ok(out);
    }
    let values = to_complex(cx, a)?;
    let (mut ws, mut vls, mut vrs, mut infos) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let (w, vl, vr, info) = geev(&values[b * n * n..(b + 1) * n * n], n, real);
        ws.extend(w);
        vls.extend(if left { vl } else { vec![ZERO; n * n] });
        vrs.extend(if right { vr } else { vec![ZERO; n * n] });
        infos.push(info);
    }
    let mut out = Vec::new();
    if real {
        out.push(from_complex(
            ws.iter().map(|w| C::new(w.re, 0.0)).collect(),
            tys[0],
        )?);
        out.push(from_complex(
            ws.iter().map(|w| C::new(w.im, 0.0)).collect(),
            tys[1],
        )?);
    } else {
        out.push(from_complex(ws, tys[0])?);
    }
    out.push(from_complex(vls, tys[w_count])?);
    out.push(from_complex(vrs, tys[w_count + 1])?);
    out.push(from_i32(infos, info_ty)?);
    Ok(out)
}

fn gees_call(
    cx: OpCx<'_>,
    values: &[C],
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(if et.is_complex() { 5 } else { 6 })?;
    if m != n {
        return Err(cx.invalid("gees needs square matrices"));
    }
    let vectors = config_char(cx, "mode", 'V', "VN")? == 'V';
    if config_char(cx, "sort", 'N', "NS")? != 'N' {
        return Err(cx.unsupported("gees with sorted eigenvalues"));
    }
    let real = !et.is_complex();
    let shape = with(batch_dims, &[n, n]);
    let t_ty = expect_result(cx, 0, &shape, et)?;
    let z_ty = expect_result(cx, 1, &shape, et)?;
    let w_count = if real { 2 } else { 1 };
    let mut w_tys = Vec::new();
    for i in 0..w_count {
        w_tys.push(expect_result(cx, 2 + i, &with(batch_dims, &[n]), et)?);
    }
    let sdim_ty = expect_result(cx, 2 + w_count, batch_dims, ElementType::S32)?;
    let info_ty = expect_result(cx, 3 + w_count, batch_dims, ElementType::S32)?;
    let (mut ts, mut zs, mut ws, mut infos) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let lapack = lent::lent_lapack();
    for b in 0..batch {
        let m = &values[b * n * n..(b + 1) * n * n];
        let (t, z, w, info) = match et {
            ElementType::F32 => {
                let re: Vec<f32> = m.iter().map(|x| x.re as f32).collect();
                match lent::real_gees(lapack.sgees.as_deref(), &re, n, vectors) {
                    Some(form) => lift_lent_real_schur(form),
                    None => lift_real_schur(schur::real_gees(&re, n, vectors), |x| x as f64),
                }
            }
            ElementType::F64 => {
                let re: Vec<f64> = m.iter().map(|x| x.re).collect();
                match lent::real_gees(lapack.dgees.as_deref(), &re, n, vectors) {
                    Some(form) => lift_lent_real_schur(form),
                    None => lift_real_schur(schur::real_gees(&re, n, vectors), |x| x),
                }
            }
            ElementType::C64 if lapack.cgees.is_some() => {
                let narrow: Vec<Complex<f32>> = m
                    .iter()
                    .map(|x| Complex::new(x.re as f32, x.im as f32))
                    .collect();
                let widen = |v: Vec<Complex<f32>>| -> Vec<C> {
                    v.into_iter()
                        .map(|x| C::new(x.re as f64, x.im as f64))
                        .collect()
                };
                match lent::complex_gees(lapack.cgees.as_deref(), &narrow, n, vectors) {
                    Some((t, z, w, info)) => (widen(t), widen(z), widen(w), info),
                    None => native_complex_schur(m, n, vectors),
                }
            }
            ElementType::C128 => match lent::complex_gees(lapack.zgees.as_deref(), m, n, vectors) {
                Some(form) => form,
                None => native_complex_schur(m, n, vectors),
            },
            _ => native_complex_schur(m, n, vectors),
        };
        ws.extend(w);
        ts.extend(t);
        zs.extend(if vectors { z } else { vec![ZERO; n * n] });
        infos.push(info);
    }
    let mut out = vec![from_complex(ts, t_ty)?, from_complex(zs, z_ty)?];
    if real {
        out.push(from_complex(
            ws.iter().map(|w| C::new(w.re, 0.0)).collect(),
            w_tys[0],
        )?);
        out.push(from_complex(
            ws.iter().map(|w| C::new(w.im, 0.0)).collect(),
            w_tys[1],
        )?);
    } else {
        out.push(from_complex(ws, w_tys[0])?);
    }
    out.push(from_i32(vec![0; batch], sdim_ty)?);
    out.push(from_i32(infos, info_ty)?);
    Ok(out)
}

/// oxla's own complex Schur form. Complex forms follow rounding noise (see `schur`), so
/// they cannot be LAPACK's in any precision; complex<f32> matrices take the more accurate
/// f64 iteration.
fn native_complex_schur(m: &[C], n: usize, vectors: bool) -> (Vec<C>, Vec<C>, Vec<C>, i32) {
    let s = schur::complex_gees(m, n, vectors);
    (s.t, s.z, s.w, s.info)
}

/// A real Schur form from a lent `gees` in `complex<f64>` parts.
fn lift_lent_real_schur<T: Into<f64>>(form: lent::RealForm<T>) -> (Vec<C>, Vec<C>, Vec<C>, i32) {
    let (t, z, wr, wi, info) = form;
    let lift = |v: Vec<T>| v.into_iter().map(|x| C::new(x.into(), 0.0)).collect();
    let w = wr
        .into_iter()
        .zip(wi)
        .map(|(re, im)| C::new(re.into(), im.into()))
        .collect();
    (lift(t), lift(z), w, info)
}

/// A real Schur form in `complex<f64>` parts: `T`, `Z` and the eigenvalues.
fn lift_real_schur<T: Copy>(
    s: schur::RealSchur<T>,
    widen: impl Fn(T) -> f64 + Copy,
) -> (Vec<C>, Vec<C>, Vec<C>, i32) {
    let lift = |v: Vec<T>| {
        v.into_iter()
            .map(|x| C::new(widen(x), 0.0))
            .collect::<Vec<_>>()
    };
    let w =
        s.wr.iter()
            .zip(&s.wi)
            .map(|(&re, &im)| C::new(widen(re), widen(im)))
            .collect();
    (lift(s.t), lift(s.z), w, s.info)
}

#[allow(clippy::too_many_arguments)]
fn geqp3_call(
    cx: OpCx<'_>,
    values: &[C],
    jpvt: &Literal,
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(3)?;
    let jpvt_shape = with(batch_dims, &[n]);
    if jpvt.ty.element_type != ElementType::S32 || jpvt.ty.shape != jpvt_shape {
        return Err(cx.invalid(format!(
            "the pivots must be tensor<{}i32>, got {}",
            jpvt_shape
                .iter()
                .map(|d| format!("{d}x"))
                .collect::<String>(),
            jpvt.ty
        )));
    }
    let k = m.min(n);
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[m, n]), et)?;
    let jpvt_ty = expect_result(cx, 1, &jpvt_shape, ElementType::S32)?;
    let tau_ty = expect_result(cx, 2, &with(batch_dims, &[k]), et)?;
    let fixed = match decode(jpvt) {
        Array::S32(v) => v,
        _ => return Err(cx.invalid("internal: pivots are not i32")),
    };
    let mut out = values.to_vec();
    let mut pivots = Vec::with_capacity(batch * n);
    let mut taus = Vec::with_capacity(batch * k);
    for b in 0..batch {
        let (piv, tau) = geqp3(
            &mut out[b * m * n..(b + 1) * m * n],
            m,
            n,
            &fixed[b * n..(b + 1) * n],
        );
        pivots.extend(piv);
        taus.extend(tau);
    }
    Ok(vec![
        from_complex(out, a_ty)?,
        from_i32(pivots, jpvt_ty)?,
        from_complex(taus, tau_ty)?,
    ])
}

fn sytrd_call(
    cx: OpCx<'_>,
    values: &[C],
    batch_dims: &[i64],
    batch: usize,
    m: usize,
    n: usize,
    et: ElementType,
) -> Result<Vec<Literal>, IrError> {
    cx.expect_results(5)?;
    if m != n {
        return Err(cx.invalid("sytrd needs square matrices"));
    }
    // The upper triangle of `a` is the lower triangle of `a` reversed along both axes, and
    // LAPACK's upper reduction (last column first) is the lower one of that reversed matrix:
    // the same reflectors, their entries in reverse order. So an upper call reverses the
    // matrices in and out, and `d`, `e` and `tau`.
    let upper = config_char(cx, "uplo", 'L', "LU")? == 'U';
    let reverse = |m: &mut [C]| {
        for block in m.chunks_exact_mut((n * n).max(1)) {
            block.reverse();
        }
    };
    let n1 = n.saturating_sub(1);
    let a_ty = expect_result(cx, 0, &with(batch_dims, &[n, n]), et)?;
    let d_ty = expect_result(cx, 1, &with(batch_dims, &[n]), real_of(et))?;
    let e_ty = expect_result(cx, 2, &with(batch_dims, &[n1]), real_of(et))?;
    let tau_ty = expect_result(cx, 3, &with(batch_dims, &[n1]), et)?;
    let info_ty = expect_result(cx, 4, batch_dims, ElementType::S32)?;
    let mut out = values.to_vec();
    if upper {
        reverse(&mut out);
    }
    let (mut ds, mut es, mut taus) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..batch {
        let a = &mut out[b * n * n..(b + 1) * n * n];
        // The reduction of the Hermitian matrix the lower triangle defines is its Hessenberg
        // reduction; the strict upper triangle keeps its input.
        let mut h = vec![ZERO; n * n];
        for i in 0..n {
            for j in 0..=i {
                h[i * n + j] = a[i * n + j];
                h[j * n + i] = a[i * n + j].conj();
            }
            h[i * n + i] = C::new(a[i * n + i].re, 0.0);
        }
        taus.extend(gehrd(&mut h, n));
        for i in 0..n {
            for j in 0..=i {
                a[i * n + j] = h[i * n + j];
            }
            a[i * n + i] = C::new(h[i * n + i].re, 0.0);
        }
        let (d0, e0, t0) = (ds.len(), es.len(), taus.len() - n1);
        ds.extend((0..n).map(|i| C::new(h[i * n + i].re, 0.0)));
        es.extend((0..n1).map(|i| C::new(h[(i + 1) * n + i].re, 0.0)));
        if upper {
            ds[d0..].reverse();
            es[e0..].reverse();
            taus[t0..].reverse();
        }
    }
    if upper {
        reverse(&mut out);
    }
    Ok(vec![
        from_complex(out, a_ty)?,
        from_complex(ds, d_ty)?,
        from_complex(es, e_ty)?,
        from_complex(taus, tau_ty)?,
        from_i32(vec![0; batch], info_ty)?,
    ])
}

/// QR with column pivoting in place (row-major `m x n`), LAPACK `geqp3`: columns whose
/// `fixed` entry is nonzero go first, unpivoted; then each step takes the free column of
/// largest remaining norm (the first on ties), with LAPACK's norm downdating. Returns the
/// 1-based original column of each result column and the Householder scalars.
fn geqp3(a: &mut [C], m: usize, n: usize, fixed: &[i32]) -> (Vec<i32>, Vec<C>) {
    let k = m.min(n);
    let swap_cols = |a: &mut [C], x: usize, y: usize| {
        for r in 0..m {
            a.swap(r * n + x, r * n + y);
        }
    };
    let mut jpvt: Vec<i32> = (1..=n as i32).collect();
    let mut nfxd = 0;
    for (j, &f) in fixed.iter().enumerate().take(n) {
        if f != 0 {
            if j != nfxd {
                swap_cols(a, j, nfxd);
                jpvt.swap(j, nfxd);
            }
            nfxd += 1;
        }
    }
    let mut taus = Vec::with_capacity(k);
    for i in 0..nfxd.min(k) {
        let tau = reflector(a, n, i, i, m);
        apply_left(a, n, i, i, m, tau.conj(), i + 1, n);
        taus.push(tau);
    }
    let col_norm =
        |a: &[C], j: usize, r0: usize| (r0..m).map(|r| a[r * n + j].norm_sqr()).sum::<f64>().sqrt();
    let start = nfxd.min(k);
    let mut vn1 = vec![0.0; n];
    let mut vn2 = vec![0.0; n];
    for j in start..n {
        vn1[j] = col_norm(a, j, start);
        vn2[j] = vn1[j];
    }
    let tol3z = (f64::EPSILON / 2.0).sqrt();
    for i in start..k {
        let mut p = i;
        for j in i + 1..n {
            if vn1[j] > vn1[p] {
                p = j;
            }
        }
        if p != i {
            swap_cols(a, p, i);
            jpvt.swap(p, i);
            vn1[p] = vn1[i];
            vn2[p] = vn2[i];
        }
        let tau = reflector(a, n, i, i, m);
        apply_left(a, n, i, i, m, tau.conj(), i + 1, n);
        taus.push(tau);
        for j in i + 1..n {
            if vn1[j] == 0.0 {
                continue;
            }
            let ratio = a[i * n + j].norm() / vn1[j];
            let temp = (1.0 - ratio * ratio).max(0.0);
            let temp2 = temp * (vn1[j] / vn2[j]).powi(2);
            if temp2 <= tol3z {
                vn1[j] = if i + 1 < m {
                    col_norm(a, j, i + 1)
                } else {
                    0.0
                };
                vn2[j] = vn1[j];
            } else {
                vn1[j] *= temp.sqrt();
            }
        }
    }
    (jpvt, taus)
}

/// Cholesky factorization in place (row-major `n x n`), LAPACK `potrf`: the `lower` (or
/// upper) triangle receives the factor, the other triangle keeps its input. Returns `info`:
/// 0, or the 1-based order of the first leading minor that is not positive definite.
fn potrf(a: &mut [C], n: usize, lower: bool) -> i32 {
    // (i, j) of the lower factor L, stored at (i, j) when lower and as conj at (j, i) when
    // upper (U = L^H).
    let at = |i: usize, j: usize| if lower { i * n + j } else { j * n + i };
    let get = |a: &[C], i: usize, j: usize| {
        let v = a[at(i, j)];
        if lower {
            v
        } else {
            v.conj()
        }
    };
    for j in 0..n {
        let mut d = a[j * n + j].re;
        for k in 0..j {
            d -= get(a, j, k).norm_sqr();
        }
        // `!(d > 0)` also catches NaN.
        if d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            a[j * n + j] = C::new(d, 0.0);
            return (j + 1) as i32;
        }
        let pivot = d.sqrt();
        a[j * n + j] = C::new(pivot, 0.0);
        for i in j + 1..n {
            let mut s = get(a, i, j);
            for k in 0..j {
                s -= get(a, i, k) * get(a, j, k).conj();
            }
            let l = s / pivot;
            a[at(i, j)] = if lower { l } else { l.conj() };
        }
    }
    0
}

/// `|re| + |im|`, the magnitude LAPACK's `i?amax` compares.
pub(super) fn abs1(z: C) -> f64 {
    z.re.abs() + z.im.abs()
}

/// LU factorization with partial pivoting in place (row-major `m x n`), LAPACK `getrf`:
/// unit-lower `L` below the diagonal, `U` on and above. Returns the 1-based pivot rows and
/// `info` (0, or the 1-based index of the first exactly zero pivot).
fn getrf(a: &mut [C], m: usize, n: usize) -> (Vec<i32>, i32) {
    let k = m.min(n);
    let mut pivots = Vec::with_capacity(k);
    let mut info = 0;
    for j in 0..k {
        let mut p = j;
        for i in j + 1..m {
            if abs1(a[i * n + j]) > abs1(a[p * n + j]) {
                p = i;
            }
        }
        pivots.push((p + 1) as i32);
        let pivot = a[p * n + j];
        if pivot != ZERO {
            if p != j {
                for c in 0..n {
                    a.swap(p * n + c, j * n + c);
                }
            }
            let inv = ONE / pivot;
            for i in j + 1..m {
                a[i * n + j] *= inv;
            }
        } else if info == 0 {
            info = (j + 1) as i32;
        }
        for i in j + 1..m {
            let l = a[i * n + j];
            if l == ZERO {
                continue;
            }
            for c in j + 1..n {
                let u = a[j * n + c];
                a[i * n + c] -= l * u;
            }
        }
    }
    (pivots, info)
}

/// Householder QR in place (row-major `m x n`), LAPACK `geqrf`: `R` on and above the
/// diagonal, the reflector vectors `v` (with implicit leading 1) below it. Returns the
/// scalars `tau` with `H = I - tau v v^H` and `Q = H_1 ... H_k`.
fn geqrf(a: &mut [C], m: usize, n: usize) -> Vec<C> {
    let k = m.min(n);
    let mut taus = Vec::with_capacity(k);
    for j in 0..k {
        let tau = reflector(a, n, j, j, m);
        // Apply H^H = I - conj(tau) v v^H to the columns on the right.
        apply_left(a, n, j, j, m, tau.conj(), j + 1, n);
        taus.push(tau);
    }
    taus
}

/// LAPACK `larfg` on column `col`, rows `r0..r1` of a row-major matrix with `cols` columns:
/// finds `H = I - tau v v^H` (`v[r0] = 1`) with `H^H x = (beta, 0, ...)`, stores `beta` at
/// `r0` and `v` below it, and returns `tau` (0 when `x` is already in that form).
fn reflector(a: &mut [C], cols: usize, col: usize, r0: usize, r1: usize) -> C {
    let alpha = a[r0 * cols + col];
    let xnorm = (r0 + 1..r1)
        .map(|i| a[i * cols + col].norm_sqr())
        .sum::<f64>()
        .sqrt();
    if xnorm == 0.0 && alpha.im == 0.0 {
        return ZERO;
    }
    let beta = -(alpha.norm().hypot(xnorm)).copysign(alpha.re);
    let tau = C::new((beta - alpha.re) / beta, -alpha.im / beta);
    let scale = ONE / (alpha - beta);
    for i in r0 + 1..r1 {
        a[i * cols + col] *= scale;
    }
    a[r0 * cols + col] = C::new(beta, 0.0);
    tau
}

/// `A[r0..r1, c0..c1] -= tau v (v^H A[r0..r1, c0..c1])` with `v` the reflector stored in
/// column `vcol`, rows `r0..r1` of `a` (implicit 1 at `r0`).
#[allow(clippy::too_many_arguments)]
fn apply_left(
    a: &mut [C],
    cols: usize,
    vcol: usize,
    r0: usize,
    r1: usize,
    tau: C,
    c0: usize,
    c1: usize,
) {
    if tau == ZERO {
        return;
    }
    for c in c0..c1 {
        let mut w = a[r0 * cols + c];
        for i in r0 + 1..r1 {
            w += a[i * cols + vcol].conj() * a[i * cols + c];
        }
        let f = tau * w;
        a[r0 * cols + c] -= f;
        for i in r0 + 1..r1 {
            let v = a[i * cols + vcol];
            a[i * cols + c] -= v * f;
        }
    }
}

/// `A[0..rows, r0..r1] -= tau (A[0..rows, r0..r1] v) v^H` with `v` as in [`apply_left`].
fn apply_right(a: &mut [C], cols: usize, vcol: usize, r0: usize, r1: usize, tau: C, rows: usize) {
    if tau == ZERO {
        return;
    }
    for r in 0..rows {
        let mut w = a[r * cols + r0];
        for i in r0 + 1..r1 {
            w += a[r * cols + i] * a[i * cols + vcol];
        }
        let f = tau * w;
        a[r * cols + r0] -= f;
        for i in r0 + 1..r1 {
            let v = a[i * cols + vcol].conj();
            a[r * cols + i] -= f * v;
        }
    }
}

/// Hessenberg reduction in place (row-major `n x n`), LAPACK `gehrd` with `ilo = 1`,
/// `ihi = n`: `H` on and above the first subdiagonal, the reflectors below it. Returns the
/// `n - 1` scalars `tau` with `Q = H_1 ... H_{n-1}` and `A = Q H Q^H`.
fn gehrd(a: &mut [C], n: usize) -> Vec<C> {
    let mut taus = Vec::with_capacity(n.saturating_sub(1));
    for j in 0..n.saturating_sub(1) {
        let tau = reflector(a, n, j, j + 1, n);
        apply_right(a, n, j, j + 1, n, tau, n);
        apply_left(a, n, j, j + 1, n, tau.conj(), j + 1, n);
        taus.push(tau);
    }
    taus
}

/// `Q = H_1 ... H_{n-1}` of `gehrd`'s reflectors (packed below the subdiagonal of the
/// row-major `h`), applied backwards to the identity.
fn hessenberg_q(h: &[C], taus: &[C], n: usize) -> Vec<C> {
    let mut z = vec![ZERO; n * n];
    for d in 0..n {
        z[d * n + d] = ONE;
    }
    for (j, &tau) in taus.iter().enumerate().rev() {
        // Apply H_j from the left to columns j+1.. of Z, with v taken from column j of `h`.
        for c in j + 1..n {
            let mut w = z[(j + 1) * n + c];
            for i in j + 2..n {
                w += h[i * n + j].conj() * z[i * n + c];
            }
            let f = tau * w;
            z[(j + 1) * n + c] -= f;
            for i in j + 2..n {
                z[i * n + c] -= h[i * n + j] * f;
            }
        }
    }
    z
}

/// The complex Schur form `A = Z T Z^H` of a row-major `n x n` matrix: `T` upper
/// triangular, `Z` unitary. Hessenberg reduction, then single-shift QR iterations with
/// Wilkinson shifts. Returns `(T, Z, info)`, `info` > 0 when the iteration did not converge
/// (as LAPACK: the 1-based index below which eigenvalues have converged).
fn schur(a: &[C], n: usize) -> (Vec<C>, Vec<C>, i32) {
    let mut h = a.to_vec();
    let taus = gehrd(&mut h, n);
    let mut z = hessenberg_q(&h, &taus, n);
    for j in 0..n {
        for i in j + 2..n {
            h[i * n + j] = ZERO;
        }
    }
    let eps = f64::EPSILON;
    let mut hi = n.saturating_sub(1);
    let mut iter = 0usize;
    let mut total = 0usize;
    let limit = 30 * n.max(1);
    while hi > 0 {
        let mut l = hi;
        while l > 0 {
            let sub = h[l * n + l - 1].norm();
            let diag = h[(l - 1) * n + l - 1].norm() + h[l * n + l].norm();
            if sub <= eps * diag || sub < f64::MIN_POSITIVE {
                h[l * n + l - 1] = ZERO;
                break;
            }
            l -= 1;
        }
        if l == hi {
            hi -= 1;
            iter = 0;
            continue;
        }
        if total >= limit || h.iter().any(|x| !x.re.is_finite() || !x.im.is_finite()) {
            return (h, z, (hi + 1) as i32);
        }
        total += 1;
        iter += 1;
        let (p, q) = (hi - 1, hi);
        let (ha, hb, hc, hd) = (h[p * n + p], h[p * n + q], h[q * n + p], h[q * n + q]);
        let mu = if iter.is_multiple_of(10) {
            hd + h[q * n + p].norm()
        } else {
            wilkinson_shift(ha, hb, hc, hd)
        };
        for k in l..hi {
            let (x, y) = if k == l {
                (h[l * n + l] - mu, h[(l + 1) * n + l])
            } else {
                (h[k * n + k - 1], h[(k + 1) * n + k - 1])
            };
            let (c, s) = givens(x, y);
            for j in k.saturating_sub(1).max(l)..n {
                let (u, w) = (h[k * n + j], h[(k + 1) * n + j]);
                h[k * n + j] = u * c + s * w;
                h[(k + 1) * n + j] = -s.conj() * u + w * c;
            }
            if k > l {
                h[(k + 1) * n + k - 1] = ZERO;
            }
            rotate_columns(&mut h, n, k, c, s, (k + 3).min(hi + 1));
            rotate_columns(&mut z, n, k, c, s, n);
        }
    }
    (h, z, 0)
}

/// The eigenvalue of `[[a, b], [c, d]]` nearer to `d`, computed as LAPACK's complex QR
/// iteration (`lahqr`) computes its shift: `d - u^2 / (x + y)` with `u = sqrt(b) sqrt(c)`,
/// `x = (a - d) / 2` and `y = sqrt(x^2 + u^2)` taken with the sign that points it along `x`.
/// When both eigenvalues are equally near (`a = d`), the rounding of `u^2`'s zero imaginary
/// part picks one as LAPACK's does, so eigenvalues come out in LAPACK's order: for a real
/// standardized 2x2 block, the one with negative imaginary part converges at the bottom.
fn wilkinson_shift(a: C, b: C, c: C, d: C) -> C {
    let u = b.sqrt() * c.sqrt();
    let size = abs1(u);
    if size == 0.0 {
        return d;
    }
    let x = (a - d) * 0.5;
    let sx = abs1(x);
    let scale = size.max(sx);
    let (xs, us) = (x / scale, u / scale);
    let mut y = (xs * xs + us * us).sqrt() * scale;
    if sx > 0.0 {
        let along = x / sx;
        if along.re * y.re + along.im * y.im < 0.0 {
            y = -y;
        }
    }
    let (re, im) = super::complex::div(u.re, u.im, (x + y).re, (x + y).im);
    d - u * C::new(re, im)
}

/// Applies `G^H` (see [`givens`]) to columns `k, k + 1` of rows `0..rows`.
fn rotate_columns(m: &mut [C], n: usize, k: usize, c: f64, s: C, rows: usize) {
    for r in 0..rows {
        let (u, w) = (m[r * n + k], m[r * n + k + 1]);
        m[r * n + k] = u * c + w * s.conj();
        m[r * n + k + 1] = w * c - u * s;
    }
}

/// A rotation `G = [[c, s], [-conj(s), c]]` (c real) with `G [x; y] = [r; 0]`.
fn givens(x: C, y: C) -> (f64, C) {
    let (ax, ay) = (x.norm(), y.norm());
    let nrm = ax.hypot(ay);
    if ay == 0.0 || nrm == 0.0 {
        (1.0, ZERO)
    } else if ax == 0.0 {
        (0.0, y.conj() / ay)
    } else {
        (ax / nrm, (x / ax) * y.conj() / nrm)
    }
}

/// Scales `v` to unit norm with its largest component real and positive.
fn normalize(v: &mut [C]) {
    let norm = v.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    if norm.is_nan() || norm <= 0.0 {
        return;
    }
    let big = v.iter().copied().fold(
        ZERO,
        |best, z| if z.norm() > best.norm() { z } else { best },
    );
    let phase = big.conj() / big.norm();
    for z in v.iter_mut() {
        *z = *z * phase / norm;
    }
}

/// Eigenvalues and (when asked) left and right eigenvectors of a general row-major `n x n`
/// matrix, LAPACK `geev` style: eigenvectors as columns, each of unit norm with its largest
/// component real. For `real` input, eigenvalues whose imaginary part is at rounding level
/// are made real (with real eigenvectors), as LAPACK's real routine returns them.
fn geev(a: &[C], n: usize, real: bool) -> (Vec<C>, Vec<C>, Vec<C>, i32) {
    if a.iter().any(|x| !x.re.is_finite() || !x.im.is_finite()) {
        // LAPACK scales the matrix by its largest magnitude first, which turns an infinite
        // or NaN entry into NaNs everywhere.
        let nan = C::new(f64::NAN, f64::NAN);
        return (vec![nan; n], vec![nan; n * n], vec![nan; n * n], 0);
    }
    let (t, z, info) = schur(a, n);
    let mut w: Vec<C> = (0..n).map(|d| t[d * n + d]).collect();
    let scale = a.iter().map(|x| x.norm_sqr()).sum::<f64>().sqrt();
    let small = f64::EPSILON * scale.max(f64::MIN_POSITIVE);
    let snap: Vec<bool> = w
        .iter()
        .map(|x| real && x.im.abs() <= 8.0 * (n as f64) * small)
        .collect();
    let guard = |d: C| {
        if d.norm() < small {
            C::new(small, 0.0)
        } else {
            d
        }
    };
    let mut vr = vec![ZERO; n * n];
    let mut vl = vec![ZERO; n * n];
    for k in 0..n {
        // Right: (T - w_k) y = 0 with y_k = 1, y_j = 0 below.
        let mut y = vec![ZERO; n];
        y[k] = ONE;
        for i in (0..k).rev() {
            let s: C = (i + 1..=k).map(|j| t[i * n + j] * y[j]).sum();
            y[i] = -s / guard(t[i * n + i] - w[k]);
        }
        // Left: T^H x = conj(w_k) x with x_k = 1, x_j = 0 above.
        let mut x = vec![ZERO; n];
        x[k] = ONE;
        for i in k + 1..n {
            let s: C = (k..i).map(|j| t[j * n + i].conj() * x[j]).sum();
            x[i] = -s / guard(t[i * n + i].conj() - w[k].conj());
        }
        for (out, coef) in [(&mut vr, &y), (&mut vl, &x)] {
            let mut v: Vec<C> = (0..n)
                .map(|r| (0..n).map(|j| z[r * n + j] * coef[j]).sum())
                .collect();
            normalize(&mut v);
            if snap[k] {
                v.iter_mut().for_each(|c| c.im = 0.0);
                normalize(&mut v);
            }
            for r in 0..n {
                out[r * n + k] = v[r];
            }
        }
    }
    for (x, &s) in w.iter_mut().zip(&snap) {
        if s {
            x.im = 0.0;
        }
    }
    (w, vl, vr, info)
}

/// The first `n` columns of `Q = H_1 ... H_k` from `geqrf`'s packed reflectors, LAPACK
/// `orgqr`/`ungqr` (row-major `m x n`, `m >= n >= k`).
fn orgqr(a: &[C], taus: &[C], m: usize, n: usize) -> Vec<C> {
    let mut q = vec![ZERO; m * n];
    for d in 0..n {
        q[d * n + d] = ONE;
    }
    for (i, &tau) in taus.iter().enumerate().rev() {
        if tau == ZERO {
            continue;
        }
        for c in 0..n {
            let mut w = q[i * n + c];
            for r in i + 1..m {
                w += a[r * n + i].conj() * q[r * n + c];
            }
            let f = tau * w;
            q[i * n + c] -= f;
            for r in i + 1..m {
                q[r * n + c] -= a[r * n + i] * f;
            }
        }
    }
    q
}

/// Eigen-decomposition of the Hermitian matrix whose `lower` (or upper) triangle `a` holds,
/// by cyclic Jacobi rotations. Returns the eigenvalues in ascending order and the
/// eigenvectors as the columns of a row-major `n x n` matrix.
fn eigh(a: &[C], n: usize, lower: bool) -> (Vec<f64>, Vec<C>) {
    let mut h = vec![ZERO; n * n];
    for i in 0..n {
        for j in 0..=i {
            let v = if lower {
                a[i * n + j]
            } else {
                a[j * n + i].conj()
            };
            h[i * n + j] = v;
            h[j * n + i] = v.conj();
        }
        h[i * n + i] = C::new(h[i * n + i].re, 0.0);
    }
    let mut v = vec![ZERO; n * n];
    for d in 0..n {
        v[d * n + d] = ONE;
    }
    let total: f64 = h.iter().map(|z| z.norm_sqr()).sum();
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| h[i * n + j].norm_sqr())
            .sum();
        if off.is_nan() || off <= f64::EPSILON * f64::EPSILON * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = h[p * n + q];
                let g = apq.norm();
                if g == 0.0 {
                    continue;
                }
                // U = diag(1, phase) * [[c, s], [-s, c]] with phase = conj(apq) / |apq|
                // makes the (p, q) entry of U^H H U zero.
                let phase = apq.conj() / g;
                let tau = (h[q * n + q].re - h[p * n + p].re) / (2.0 * g);
                let t = if tau >= 0.0 {
                    1.0 / (tau + (1.0 + tau * tau).sqrt())
                } else {
                    -1.0 / (-tau + (1.0 + tau * tau).sqrt())
                };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = t * c;
                let (upp, upq) = (C::new(c, 0.0), C::new(s, 0.0));
                let (uqp, uqq) = (phase * -s, phase * c);
                for r in 0..n {
                    let (x, y) = (h[r * n + p], h[r * n + q]);
                    h[r * n + p] = x * upp + y * uqp;
                    h[r * n + q] = x * upq + y * uqq;
                    let (x, y) = (v[r * n + p], v[r * n + q]);
                    v[r * n + p] = x * upp + y * uqp;
                    v[r * n + q] = x * upq + y * uqq;
                }
                for r in 0..n {
                    let (x, y) = (h[p * n + r], h[q * n + r]);
                    h[p * n + r] = upp.conj() * x + uqp.conj() * y;
                    h[q * n + r] = upq.conj() * x + uqq.conj() * y;
                }
                h[p * n + q] = ZERO;
                h[q * n + p] = ZERO;
                h[p * n + p] = C::new(h[p * n + p].re, 0.0);
                h[q * n + q] = C::new(h[q * n + q].re, 0.0);
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| h[x * n + x].re.total_cmp(&h[y * n + y].re));
    let w = order.iter().map(|&d| h[d * n + d].re).collect();
    let mut vs = vec![ZERO; n * n];
    for (col, &src) in order.iter().enumerate() {
        for r in 0..n {
            vs[r * n + col] = v[r * n + src];
        }
    }
    (w, vs)
}

/// Singular value decomposition `a = U diag(s) V^H` of a row-major `m x n` matrix. Returns
/// the `k = min(m, n)` singular values in descending order, `U` and `V`, both row-major:
/// with `full`, the unitary `m x m` and `n x n` matrices; otherwise their first `k` columns
/// only (`m x k` and `n x k`), which is all a thin decomposition of a 400000 x 2 matrix
/// may allocate.
fn svd(a: &[C], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<C>, Vec<C>) {
    if m >= n {
        svd_tall(a, m, n, full)
    } else {
        // a^H = U' S V'^H, so a = V' S U'^H.
        let ah: Vec<C> = (0..n * m).map(|q| a[(q % m) * n + q / m].conj()).collect();
        let (s, u, v) = svd_tall(&ah, n, m, full);
        (s, v, u)
    }
}

/// [`svd`] for `m >= n`, by one-sided Jacobi rotations on the columns of `a`; `U` has `m`
/// columns with `full`, else `n`.
fn svd_tall(a: &[C], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<C>, Vec<C>) {
    let mut w = a.to_vec();
    let mut v = vec![ZERO; n * n];
    for d in 0..n {
        v[d * n + d] = ONE;
    }
    let tol = f64::EPSILON;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, ZERO);
                for r in 0..m {
                    let (x, y) = (w[r * n + p], w[r * n + q]);
                    alpha += x.norm_sqr();
                    beta += y.norm_sqr();
                    gamma += x.conj() * y;
                }
                let g = gamma.norm();
                if g.is_nan() || g == 0.0 || g <= tol * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                // Column q times conj(gamma)/|gamma| makes the inner product real; then a
                // real rotation makes the two columns orthogonal.
                let phase = gamma.conj() / g;
                let zeta = (beta - alpha) / (2.0 * g);
                let t = if zeta >= 0.0 {
                    1.0 / (zeta + (1.0 + zeta * zeta).sqrt())
                } else {
                    -1.0 / (-zeta + (1.0 + zeta * zeta).sqrt())
                };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for (mat, rows, cols) in [(&mut w, m, n), (&mut v, n, n)] {
                    for r in 0..rows {
                        let x = mat[r * cols + p];
                        let y = mat[r * cols + q] * phase;
                        mat[r * cols + p] = x * c - y * s;
                        mat[r * cols + q] = x * s + y * c;
                    }
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|r| w[r * n + j].norm_sqr()).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let largest = s.first().copied().unwrap_or(0.0);
    let negligible = largest * f64::EPSILON * (m.max(n) as f64) * 4.0;
    // U's columns: the normalized columns of a V, then an orthonormal completion.
    let mut u_cols: Vec<Vec<C>> = Vec::with_capacity(m);
    let mut vs = vec![ZERO; n * n];
    for (col, &j) in order.iter().enumerate() {
        for r in 0..n {
            vs[r * n + col] = v[r * n + j];
        }
        if norms[j] > negligible && norms[j].is_finite() {
            u_cols.push((0..m).map(|r| w[r * n + j] / norms[j]).collect());
        } else {
            u_cols.push(Vec::new());
        }
    }
    let width = if full { m } else { n };
    u_cols.resize(width, Vec::new());
    complete_orthonormal(&mut u_cols, m);
    let mut u = vec![ZERO; m * width];
    for (col, vec) in u_cols.iter().enumerate() {
        for (r, &x) in vec.iter().enumerate() {
            u[r * width + col] = x;
        }
    }
    (s, u, vs)
}

/// Fills the empty columns of `cols` (each of length `m` once filled) with unit vectors
/// orthogonal to all others, by Gram-Schmidt on the standard basis.
fn complete_orthonormal(cols: &mut [Vec<C>], m: usize) {
    let mut candidate = 0;
    for slot in 0..cols.len() {
        if !cols[slot].is_empty() {
            continue;
        }
        while candidate < m {
            let mut x = vec![ZERO; m];
            x[candidate] = ONE;
            candidate += 1;
            for _ in 0..2 {
                for other in cols.iter().filter(|c| !c.is_empty()) {
                    let dot: C = other.iter().zip(&x).map(|(o, xi)| o.conj() * xi).sum();
                    for (xi, o) in x.iter_mut().zip(other) {
                        *xi -= dot * o;
                    }
                }
            }
            let norm = x.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
            if norm > 0.5 {
                cols[slot] = x.into_iter().map(|z| z / norm).collect();
                break;
            }
        }
        if cols[slot].is_empty() {
            // Cannot happen for fewer than m columns; keep the shape regardless.
            cols[slot] = vec![ZERO; m];
        }
    }
}

#[cfg(test)]
mod tests;
