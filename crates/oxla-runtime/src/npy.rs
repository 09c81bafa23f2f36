//! NumPy `.npy` files: reading them into tensors and writing tensors out.
//!
//! Versions 1.0, 2.0 and 3.0 are read; little- and big-endian data and Fortran order are
//! converted to oxla's row-major little-endian layout. Files are written as version 1.0.
//! Element types: bool, signed and unsigned 8–64-bit integers, float16/32/64 and
//! complex64/128 (NumPy has no standard spelling for bfloat16 or the float8 types).

use crate::error::{Result, RuntimeError};
use oxla_ir::{ElementType, Literal, TensorType};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn bad(detail: impl Into<String>) -> RuntimeError {
    RuntimeError::InvalidArgument(format!("bad .npy data: {}", detail.into()))
}

/// The `.npy` type code of an element type (without byte order), if NumPy has one.
fn descr(ty: ElementType) -> Option<&'static str> {
    use ElementType::*;
    Some(match ty {
        Pred => "b1",
        S8 => "i1",
        S16 => "i2",
        S32 => "i4",
        S64 => "i8",
        U8 => "u1",
        U16 => "u2",
        U32 => "u4",
        U64 => "u8",
        F16 => "f2",
        F32 => "f4",
        F64 => "f8",
        C64 => "c8",
        C128 => "c16",
        _ => return None,
    })
}

fn from_descr(code: &str) -> Option<ElementType> {
    use ElementType::*;
    Some(match code {
        "b1" | "?" => Pred,
        "i1" => S8,
        "i2" => S16,
        "i4" => S32,
        "i8" => S64,
        "u1" => U8,
        "u2" => U16,
        "u4" => U32,
        "u8" => U64,
        "f2" => F16,
        "f4" => F32,
        "f8" => F64,
        "c8" => C64,
        "c16" => C128,
        _ => return None,
    })
}

/// Writes `tensor` as a `.npy` file's bytes.
pub fn to_npy(tensor: &Literal) -> Result<Vec<u8>> {
    let code = descr(tensor.ty.element_type).ok_or_else(|| {
        RuntimeError::Unsupported(format!(
            "{} has no .npy element type",
            tensor.ty.element_type
        ))
    })?;
    let order = if tensor.ty.element_type.byte_size() == 1 {
        '|'
    } else {
        '<'
    };
    let shape = match tensor.ty.shape.as_slice() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header =
        format!("{{'descr': '{order}{code}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let header_len = u16::try_from(header.len()).map_err(|_| bad("shape too long"))?;
    let mut out = Vec::with_capacity(10 + header.len() + tensor.data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&tensor.data);
    Ok(out)
}

/// Reads a `.npy` file's bytes.
pub fn from_npy(bytes: &[u8]) -> Result<Literal> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("not a .npy file (bad magic)"));
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(bad(format!("unknown format version {v}"))),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| bad("header not text"))?;
    let descr_text = dict_value(header, "descr")?;
    let descr_text = descr_text.trim_matches(|c| c == '\'' || c == '"');
    let (big_endian, code) = match descr_text.chars().next() {
        Some('<') | Some('|') | Some('=') => (false, &descr_text[1..]),
        Some('>') => (true, &descr_text[1..]),
        _ => (false, descr_text),
    };
    let element_type = from_descr(code)
        .ok_or_else(|| bad(format!("element type `{descr_text}` is not supported")))?;
    let fortran = match dict_value(header, "fortran_order")?.trim() {
        "True" => true,
        "False" => false,
        other => return Err(bad(format!("fortran_order is `{other}`"))),
    };
    let shape_text = dict_value(header, "shape")?;
    let shape_text = shape_text
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad("shape is not a tuple"))?;
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<i64>().map_err(|_| bad(format!("extent `{s}`"))))
        .collect::<Result<Vec<_>>>()?;
    let ty = TensorType::new(shape.clone(), element_type);
    let size = ty.byte_size().ok_or_else(|| bad("shape too large"))?;
    let data = &bytes[end..];
    if data.len() != size {
        return Err(bad(format!(
            "{ty} needs {size} bytes of data, the file has {}",
            data.len()
        )));
    }
    let mut data = data.to_vec();
    let width = element_type.byte_size();
    if big_endian && width > 1 {
        // Complex numbers swap each half separately.
        let unit = if element_type.is_complex() {
            width / 2
        } else {
            width
        };
        data.chunks_exact_mut(unit).for_each(|c| c.reverse());
    }
    if fortran && shape.len() > 1 {
        data = fortran_to_row_major(&data, &shape, width);
    }
    Ok(Literal::new(ty, data)?)
}

/// The value of `key` in a `.npy` header dict (a Python literal).
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str> {
    let needle_single = format!("'{key}'");
    let needle_double = format!("\"{key}\"");
    let pos = header
        .find(&needle_single)
        .or_else(|| header.find(&needle_double))
        .ok_or_else(|| bad(format!("header has no `{key}`")))?;
    let rest = &header[pos + key.len() + 2..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')
        .ok_or_else(|| bad(format!("`{key}` has no value")))?
        .trim_start();
    // The value ends at the first top-level comma or closing brace.
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(bad(format!("`{key}` has no end")))
}

fn fortran_to_row_major(data: &[u8], shape: &[i64], width: usize) -> Vec<u8> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let count: usize = dims.iter().product();
    // Column-major strides (in elements).
    let mut strides = vec![1usize; dims.len()];
    for i in 1..dims.len() {
        strides[i] = strides[i - 1] * dims[i - 1];
    }
    let mut out = vec![0u8; data.len()];
    let mut index = vec![0usize; dims.len()];
    for dst in 0..count {
        let src: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out[dst * width..(dst + 1) * width].copy_from_slice(&data[src * width..(src + 1) * width]);
        for axis in (0..dims.len()).rev() {
            index[axis] += 1;
            if index[axis] < dims[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_type_shape_and_data() {
        for shape in [vec![], vec![0], vec![5], vec![2, 3]] {
            let n: i64 = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| i as f32 * 1.5 - 2.0).collect();
            let tensor = Literal::from_f32(&shape, &values).unwrap();
            let bytes = to_npy(&tensor).unwrap();
            assert_eq!(bytes[..6], MAGIC[..]);
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0, "header is 64-byte aligned");
            assert_eq!(from_npy(&bytes).unwrap(), tensor);
        }
    }

    #[test]
    fn big_endian_and_fortran_order_are_converted() {
        // A 2x3 int16 array [[1,2,3],[4,5,6]] stored big-endian in column-major order.
        let header = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        for v in [1i16, 4, 2, 5, 3, 6] {
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        let tensor = from_npy(&bytes).unwrap();
        assert_eq!(tensor.ty, TensorType::new(vec![2, 3], ElementType::S16));
        let values: Vec<i16> = tensor
            .data
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(values, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn malformed_files_are_errors() {
        let good = to_npy(&Literal::from_i32(&[4], &[1, 2, 3, 4]).unwrap()).unwrap();
        for cut in 0..good.len() {
            assert!(from_npy(&good[..cut]).is_err(), "truncated at {cut}");
        }
        let mut bad_type = good.clone();
        let pos = bad_type.windows(3).position(|w| w == b"<i4").unwrap();
        bad_type[pos + 1] = b'V';
        assert!(from_npy(&bad_type).is_err());
    }
}
