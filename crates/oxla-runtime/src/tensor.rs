//! Tensors as text: parsing `3x4xf32=1` style literals and printing values.
//!
//! A literal is `SHAPE x TYPE = VALUES`, written as in a StableHLO tensor type without the
//! `tensor<>`: `f32=2.5` is a scalar, `3x4xf32=1` fills a 3x4 array with ones, and
//! `3xi32=1,2,3` (or `3xi32=[1,2,3]`) lists every element in row-major order. Types:
//! `i1` (or `bool`), `i8`–`i64`, `ui8`–`ui64`, `f16`, `bf16`, `f32`, `f64`.

use crate::error::{Result, RuntimeError};
use half::{bf16, f16};
use oxla_ir::{ElementType, Literal, TensorType};

fn bad(text: &str, detail: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::InvalidArgument(format!("bad tensor literal `{text}`: {detail}"))
}

/// Parses a tensor literal such as `3x4xf32=1` (see the module documentation).
pub fn parse_tensor_literal(text: &str) -> Result<Literal> {
    let (ty_text, values_text) = text
        .split_once('=')
        .ok_or_else(|| bad(text, "expected TYPE=VALUES, e.g. 3x4xf32=1"))?;
    let mut parts: Vec<&str> = ty_text.trim().split('x').collect();
    let element_name = parts.pop().unwrap_or_default();
    let element_type = match element_name {
        "bool" => Some(ElementType::Pred),
        name => ElementType::from_name(name),
    }
    .ok_or_else(|| bad(text, format!("unknown element type `{element_name}`")))?;
    let shape = parts
        .iter()
        .map(|d| {
            d.parse::<i64>()
                .ok()
                .filter(|&d| d >= 0)
                .ok_or_else(|| bad(text, format!("extent `{d}` is not a non-negative integer")))
        })
        .collect::<Result<Vec<_>>>()?;
    let ty = TensorType::new(shape, element_type);
    let count = ty
        .num_elements()
        .filter(|_| ty.byte_size().is_some())
        .ok_or_else(|| bad(text, "too many elements"))?;
    let cleaned: String = values_text
        .chars()
        .filter(|c| !matches!(c, '[' | ']'))
        .collect();
    let items: Vec<&str> = cleaned
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let encoded: Vec<Vec<u8>> = items
        .iter()
        .map(|item| {
            encode(element_type, item)
                .ok_or_else(|| bad(text, format!("`{item}` is not a valid {element_type}")))
        })
        .collect::<Result<_>>()?;
    let data = match encoded.len() {
        1 => encoded[0].repeat(count),
        n if n == count => encoded.concat(),
        n => {
            return Err(bad(
                text,
                format!("{ty} has {count} elements, {n} values were given"),
            ))
        }
    };
    Ok(Literal::new(ty, data)?)
}

fn encode(ty: ElementType, item: &str) -> Option<Vec<u8>> {
    use ElementType::*;
    let float = || -> Option<f64> {
        match item.to_ascii_lowercase().as_str() {
            "nan" => Some(f64::NAN),
            "inf" | "+inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            s => s.parse().ok(),
        }
    };
    let int = || item.parse::<i128>().ok();
    Some(match ty {
        Pred => match item {
            "true" | "True" | "1" => vec![1],
            "false" | "False" | "0" => vec![0],
            _ => return None,
        },
        S8 => i8::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        S16 => i16::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        S32 => i32::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        S64 => i64::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        U8 => u8::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        U16 => u16::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        U32 => u32::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        U64 => u64::try_from(int()?).ok()?.to_le_bytes().to_vec(),
        F16 => f16::from_f64(float()?).to_le_bytes().to_vec(),
        BF16 => bf16::from_f64(float()?).to_le_bytes().to_vec(),
        F32 => (float()? as f32).to_le_bytes().to_vec(),
        F64 => float()?.to_le_bytes().to_vec(),
        _ => return None,
    })
}

/// One element as text.
fn element_text(ty: ElementType, b: &[u8]) -> String {
    use ElementType::*;
    macro_rules! le {
        ($t:ty) => {
            <$t>::from_le_bytes(b.try_into().unwrap_or_default())
        };
    }
    match ty {
        Pred => (if b[0] != 0 { "true" } else { "false" }).to_string(),
        S8 => le!(i8).to_string(),
        S16 => le!(i16).to_string(),
        S32 => le!(i32).to_string(),
        S64 => le!(i64).to_string(),
        U8 => le!(u8).to_string(),
        U16 => le!(u16).to_string(),
        U32 => le!(u32).to_string(),
        U64 => le!(u64).to_string(),
        F16 => float_text(f16::from_le_bytes([b[0], b[1]])),
        BF16 => float_text(bf16::from_le_bytes([b[0], b[1]])),
        F32 => float_text(le!(f32)),
        F64 => float_text(le!(f64)),
        C64 => {
            let re = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let im = f32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            format!("{}{:+}j", float_text(re), im)
        }
        C128 => {
            let re = f64::from_le_bytes(b[..8].try_into().unwrap_or_default());
            let im = f64::from_le_bytes(b[8..].try_into().unwrap_or_default());
            format!("{}{:+}j", float_text(re), im)
        }
        _ => b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
    }
}

/// A float in its shortest round-tripping form for its own type (`0.8`, not the f64
/// expansion of the f32 nearest to it); `nan`, `inf`, `-inf` as NumPy prints them.
fn float_text<T: std::fmt::Display + Into<f64> + Copy>(v: T) -> String {
    let wide: f64 = v.into();
    if wide.is_nan() {
        "nan".to_string()
    } else if wide.is_infinite() {
        if wide > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{v}")
    }
}

/// Elements shown at each edge of an axis once a tensor is too large to print whole.
const EDGE_ITEMS: usize = 3;
/// Tensors with more elements than this print in summary form.
const SUMMARY_THRESHOLD: usize = 1000;

/// The tensor's elements as nested brackets, row-major (like NumPy; large tensors show
/// only the first and last three entries of each axis).
pub fn format_tensor(tensor: &Literal) -> String {
    let ty = tensor.ty.element_type;
    let width = ty.byte_size();
    let dims: Vec<usize> = tensor.ty.shape.iter().map(|&d| d.max(0) as usize).collect();
    let count: usize = dims.iter().product();
    let summarize = count > SUMMARY_THRESHOLD;
    let mut out = String::new();
    write_axis(&mut out, &tensor.data, ty, width, &dims, 0, 0, summarize);
    out
}

#[allow(clippy::too_many_arguments)]
fn write_axis(
    out: &mut String,
    data: &[u8],
    ty: ElementType,
    width: usize,
    dims: &[usize],
    axis: usize,
    offset: usize,
    summarize: bool,
) {
    if axis == dims.len() {
        let start = offset * width;
        out.push_str(&element_text(ty, &data[start..start + width]));
        return;
    }
    let extent = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    out.push('[');
    let indices: Vec<Option<usize>> = if summarize && extent > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((extent - EDGE_ITEMS..extent).map(Some))
            .collect()
    } else {
        (0..extent).map(Some).collect()
    };
    for (n, index) in indices.iter().enumerate() {
        if n > 0 {
            out.push(',');
            if axis + 1 < dims.len() {
                out.push('\n');
                out.push_str(&" ".repeat(axis + 1));
            } else {
                out.push(' ');
            }
        }
        match index {
            Some(i) => write_axis(
                out,
                data,
                ty,
                width,
                dims,
                axis + 1,
                offset + i * inner,
                summarize,
            ),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parse_to_the_stated_type_and_values() {
        let t = parse_tensor_literal("3x4xf32=1").unwrap();
        assert_eq!(t, Literal::from_f32(&[3, 4], &[1.0; 12]).unwrap());
        let t = parse_tensor_literal("3xi32=[1, 2, -3]").unwrap();
        assert_eq!(t, Literal::from_i32(&[3], &[1, 2, -3]).unwrap());
        let t = parse_tensor_literal("f32=2.5").unwrap();
        assert_eq!(t, Literal::from_f32(&[], &[2.5]).unwrap());
        let t = parse_tensor_literal("2xbool=true,false").unwrap();
        assert_eq!(*t.data, [1, 0]);
        let t = parse_tensor_literal("0x3xf32=0").unwrap();
        assert!(t.data.is_empty());
    }

    #[test]
    fn bad_literals_are_errors() {
        for text in [
            "3x4xf32",
            "3x4xf33=1",
            "3x-1xf32=1",
            "3xi32=1,2",
            "ui8=256",
            "f32=abc",
            "2xcomplex<f32>=1",
            "99999999999x99999999999xf64=1",
        ] {
            let err = parse_tensor_literal(text).unwrap_err();
            assert_eq!(
                err.code(),
                crate::ErrorCode::InvalidArgument,
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn formatting_nests_rows() {
        let t = Literal::from_f32(&[2, 2], &[1.0, 2.5, -0.0, f32::NAN]).unwrap();
        assert_eq!(format_tensor(&t), "[[1, 2.5],\n [-0, nan]]");
        let t = Literal::from_i32(&[], &[7]).unwrap();
        assert_eq!(format_tensor(&t), "7");
        let values: Vec<i32> = (0..2000).collect();
        let t = Literal::from_i32(&[2000], &values).unwrap();
        assert_eq!(format_tensor(&t), "[0, 1, 2, ..., 1997, 1998, 1999]");
    }
}
