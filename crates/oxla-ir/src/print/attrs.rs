//! Printing of attributes, dense elements, floats, strings, symbols and locations in
//! MLIR's textual syntax.

use crate::attrs::{
    Attribute, ComparisonDirection, ComparisonType, ElementsAttr, FftType, NamedAttribute,
    Precision, RngAlgorithm, RngDistribution, Transpose,
};
use crate::module::Location;
use crate::types::ElementType;
use std::fmt::Write;

/// Dense attributes with more elements than this print as a hex string, as MLIR does.
const HEX_THRESHOLD: usize = 100;

/// Writes `s` as an MLIR string literal (quotes included).
pub fn write_string(out: &mut String, s: &str) {
    write_bytes(out, s.as_bytes());
}

/// Writes `bytes` as a quoted MLIR string, escaping what is not printable ASCII as `\XX`.
pub fn write_bytes(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:02X}");
            }
        }
    }
    out.push('"');
}

/// True when `s` can be printed without quotes after `@` or as an attribute name.
fn is_bare_identifier(s: &str, allow_dash: bool) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.') || allow_dash && c == '-'
    })
}

/// Writes `@name`, quoting when needed.
pub fn write_symbol(out: &mut String, name: &str) {
    out.push('@');
    if is_bare_identifier(name, true) {
        out.push_str(name);
    } else {
        write_string(out, name);
    }
}

/// Writes an attribute name, quoting when needed.
pub fn write_attr_name(out: &mut String, name: &str) {
    if is_bare_identifier(name, false) {
        out.push_str(name);
    } else {
        write_string(out, name);
    }
}

/// Writes `{a = 1, b}`: a dictionary, entries sorted by name as MLIR keeps them.
pub fn write_dict(out: &mut String, attrs: &[NamedAttribute]) {
    let mut sorted: Vec<&NamedAttribute> = attrs.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    out.push('{');
    for (i, (name, value)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_attr_name(out, name);
        if *value != Attribute::Unit {
            out.push_str(" = ");
            write_attribute(out, value);
        }
    }
    out.push('}');
}

/// Prints an attribute as MLIR text.
pub fn print_attribute(attr: &Attribute) -> String {
    let mut out = String::new();
    write_attribute(&mut out, attr);
    out
}

/// Writes an attribute as MLIR text.
pub fn write_attribute(out: &mut String, attr: &Attribute) {
    match attr {
        Attribute::Unit => out.push_str("unit"),
        Attribute::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Attribute::Integer { value, ty } => {
            let _ = write!(out, "{value} : ");
            match ty {
                Some(ty) => out.push_str(ty.name()),
                None => out.push_str("index"),
            }
        }
        Attribute::Float { value, ty } => {
            write_float_value(out, *value, *ty);
            let _ = write!(out, " : {ty}");
        }
        Attribute::String(s) => write_string(out, s),
        Attribute::Bytes(b) => write_bytes(out, b),
        Attribute::Type(t) => {
            let _ = write!(out, "{t}");
        }
        Attribute::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_attribute(out, item);
            }
            out.push(']');
        }
        Attribute::DenseI64Array(values) => {
            out.push_str("array<i64");
            for (i, v) in values.iter().enumerate() {
                out.push_str(if i == 0 { ": " } else { ", " });
                let _ = write!(out, "{v}");
            }
            out.push('>');
        }
        Attribute::DenseBoolArray(values) => {
            out.push_str("array<i1");
            for (i, v) in values.iter().enumerate() {
                out.push_str(if i == 0 { ": " } else { ", " });
                out.push_str(if *v { "true" } else { "false" });
            }
            out.push('>');
        }
        Attribute::Elements(e) => write_elements(out, e),
        Attribute::Dictionary(entries) => write_dict(out, entries),
        Attribute::SymbolRef(name) => {
            for (i, part) in name.split("::").enumerate() {
                if i > 0 {
                    out.push_str("::");
                }
                write_symbol(out, part);
            }
        }
        Attribute::ComparisonDirection(d) => {
            let _ = write!(
                out,
                "#stablehlo<comparison_direction {}>",
                direction_name(*d)
            );
        }
        Attribute::ComparisonType(t) => {
            let _ = write!(
                out,
                "#stablehlo<comparison_type {}>",
                comparison_type_name(*t)
            );
        }
        Attribute::Precision(p) => {
            let _ = write!(out, "#stablehlo<precision {}>", precision_name(*p));
        }
        Attribute::FftType(t) => {
            let _ = write!(out, "#stablehlo<fft_type {}>", fft_type_name(*t));
        }
        Attribute::RngAlgorithm(a) => {
            let _ = write!(out, "#stablehlo<rng_algorithm {}>", rng_algorithm_name(*a));
        }
        Attribute::RngDistribution(d) => {
            let _ = write!(
                out,
                "#stablehlo<rng_distribution {}>",
                rng_distribution_name(*d)
            );
        }
        Attribute::Transpose(t) => {
            let _ = write!(out, "#stablehlo<transpose {}>", transpose_name(*t));
        }
        Attribute::Opaque(text) => out.push_str(text),
    }
}

/// `EQ`, `NE`, ...
pub fn direction_name(d: ComparisonDirection) -> &'static str {
    match d {
        ComparisonDirection::Eq => "EQ",
        ComparisonDirection::Ne => "NE",
        ComparisonDirection::Ge => "GE",
        ComparisonDirection::Gt => "GT",
        ComparisonDirection::Le => "LE",
        ComparisonDirection::Lt => "LT",
    }
}

/// `FLOAT`, `SIGNED`, ...
pub fn comparison_type_name(t: ComparisonType) -> &'static str {
    match t {
        ComparisonType::NotType => "NOTYPE",
        ComparisonType::Float => "FLOAT",
        ComparisonType::TotalOrder => "TOTALORDER",
        ComparisonType::Signed => "SIGNED",
        ComparisonType::Unsigned => "UNSIGNED",
    }
}

/// `DEFAULT`, `HIGH`, `HIGHEST`.
pub fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Default => "DEFAULT",
        Precision::High => "HIGH",
        Precision::Highest => "HIGHEST",
    }
}

/// `FFT`, `IFFT`, `RFFT`, `IRFFT`.
pub fn fft_type_name(t: FftType) -> &'static str {
    match t {
        FftType::Fft => "FFT",
        FftType::Ifft => "IFFT",
        FftType::Rfft => "RFFT",
        FftType::Irfft => "IRFFT",
    }
}

/// `DEFAULT`, `THREE_FRY`, `PHILOX`.
pub fn rng_algorithm_name(a: RngAlgorithm) -> &'static str {
    match a {
        RngAlgorithm::Default => "DEFAULT",
        RngAlgorithm::ThreeFry => "THREE_FRY",
        RngAlgorithm::Philox => "PHILOX",
    }
}

/// `UNIFORM`, `NORMAL`.
pub fn rng_distribution_name(d: RngDistribution) -> &'static str {
    match d {
        RngDistribution::Uniform => "UNIFORM",
        RngDistribution::Normal => "NORMAL",
    }
}

/// `NO_TRANSPOSE`, `TRANSPOSE`, `ADJOINT`.
pub fn transpose_name(t: Transpose) -> &'static str {
    match t {
        Transpose::NoTranspose => "NO_TRANSPOSE",
        Transpose::Transpose => "TRANSPOSE",
        Transpose::Adjoint => "ADJOINT",
    }
}

/// Writes `dense<...> : type`.
pub fn write_elements(out: &mut String, e: &ElementsAttr) {
    let et = e.ty.element_type;
    let size = et.byte_size();
    let n = e.ty.num_elements().unwrap_or(0);
    out.push_str("dense<");
    let well_formed = if e.splat {
        e.data.len() == size
    } else {
        e.data.len() == n * size
    };
    if !well_formed {
        // Data that does not fit its type: print the bytes so nothing is lost.
        out.push_str("\"0x");
        for b in e.data.iter() {
            let _ = write!(out, "{b:02X}");
        }
        out.push('"');
    } else if n == 0 {
        // `dense<>` for empty tensors.
    } else if e.splat || e.data.chunks_exact(size).all(|c| c == &e.data[..size]) {
        write_element(out, et, &e.data[..size]);
    } else if n > HEX_THRESHOLD {
        out.push_str("\"0x");
        for b in e.data.iter() {
            let _ = write!(out, "{b:02X}");
        }
        out.push('"');
    } else {
        write_nested(out, et, &e.ty.shape, &e.data);
    }
    let _ = write!(out, "> : {}", e.ty);
}

/// Writes elements of `shape` as nested lists.
fn write_nested(out: &mut String, et: ElementType, shape: &[i64], data: &[u8]) {
    let Some((&outer, inner)) = shape.split_first() else {
        write_element(out, et, data);
        return;
    };
    let outer = usize::try_from(outer).unwrap_or(0);
    let chunk = data.len().checked_div(outer).unwrap_or(0);
    out.push('[');
    for i in 0..outer {
        if i > 0 {
            out.push_str(", ");
        }
        write_nested(out, et, inner, &data[i * chunk..(i + 1) * chunk]);
    }
    out.push(']');
}

/// Writes one element from its bytes.
fn write_element(out: &mut String, et: ElementType, bytes: &[u8]) {
    use ElementType::*;
    let mut raw = [0u8; 16];
    raw[..bytes.len()].copy_from_slice(bytes);
    let bits = u128::from_le_bytes(raw);
    match et {
        Pred => out.push_str(if bits & 1 == 1 { "true" } else { "false" }),
        _ if et.is_int() => {
            let width = et.bit_width() as u32;
            let masked = bits & ((1u128 << width) - 1);
            if et.is_signed_int() && (masked >> (width - 1)) & 1 == 1 {
                let _ = write!(out, "{}", masked as i128 - (1i128 << width));
            } else {
                let _ = write!(out, "{masked}");
            }
        }
        C64 => {
            out.push('(');
            write_element(out, F32, &bytes[..4]);
            out.push(',');
            write_element(out, F32, &bytes[4..8]);
            out.push(')');
        }
        C128 => {
            out.push('(');
            write_element(out, F64, &bytes[..8]);
            out.push(',');
            write_element(out, F64, &bytes[8..16]);
            out.push(')');
        }
        _ => write_float_bits(out, bits as u64, et),
    }
}

/// Writes a float given its bit pattern in type `et`.
pub fn write_float_bits(out: &mut String, bits: u64, et: ElementType) {
    let value = match et {
        ElementType::F64 => Some(f64::from_bits(bits)),
        ElementType::F32 => Some(f64::from(f32::from_bits(bits as u32))),
        ElementType::F16 => Some(half::f16::from_bits(bits as u16).to_f64()),
        ElementType::BF16 => Some(half::bf16::from_bits(bits as u16).to_f64()),
        _ => None,
    };
    match value {
        Some(v) if v.is_finite() => write_finite_float(out, v, et),
        _ => write_hex_bits(out, bits, et),
    }
}

/// Writes a float attribute value of type `et`.
fn write_float_value(out: &mut String, value: f64, et: ElementType) {
    if value.is_finite() {
        write_finite_float(out, value, et);
        return;
    }
    let bits = match et {
        ElementType::F32 => u64::from((value as f32).to_bits()),
        ElementType::F16 => u64::from(half::f16::from_f64(value).to_bits()),
        ElementType::BF16 => u64::from(half::bf16::from_f64(value).to_bits()),
        _ => value.to_bits(),
    };
    write_hex_bits(
        out,
        bits,
        if bits > u64::from(u32::MAX) {
            ElementType::F64
        } else {
            et
        },
    );
}

/// `0x7FC00000`-style bit pattern, as wide as the type.
fn write_hex_bits(out: &mut String, bits: u64, et: ElementType) {
    let digits = et.bit_width().div_ceil(4);
    let _ = write!(out, "0x{bits:0digits$X}");
}

/// True when `text` parses back to exactly `value` in type `et`.
fn round_trips(text: &str, value: f64, et: ElementType) -> bool {
    match et {
        ElementType::F32 => text
            .parse::<f32>()
            .is_ok_and(|v| v.to_bits() == (value as f32).to_bits()),
        ElementType::F16 => text.parse::<f64>().is_ok_and(|v| {
            half::f16::from_f64(v).to_bits() == half::f16::from_f64(value).to_bits()
        }),
        ElementType::BF16 => text.parse::<f64>().is_ok_and(|v| {
            half::bf16::from_f64(v).to_bits() == half::bf16::from_f64(value).to_bits()
        }),
        _ => text
            .parse::<f64>()
            .is_ok_and(|v| v.to_bits() == value.to_bits()),
    }
}

/// Rewrites Rust's `1.5e3` exponent form into MLIR's `1.5e+03`.
fn mlir_exponent_form(rust: &str) -> String {
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((rust, "0"));
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// Writes a finite float: six significant decimals when exact, else the shortest form.
fn write_finite_float(out: &mut String, value: f64, et: ElementType) {
    let six = mlir_exponent_form(&format!("{value:.6e}"));
    if round_trips(&six, value, et) {
        out.push_str(&six);
        return;
    }
    let shortest = match et {
        ElementType::F32 => format!("{:e}", value as f32),
        ElementType::F16 => format!("{:e}", half::f16::from_f64(value).to_f32()),
        ElementType::BF16 => format!("{:e}", half::bf16::from_f64(value).to_f32()),
        _ => format!("{value:e}"),
    };
    out.push_str(&mlir_exponent_form(&shortest));
}

/// Writes the inside of `loc(...)`.
pub fn write_location(out: &mut String, loc: &Location) {
    match loc {
        Location::Unknown => out.push_str("unknown"),
        Location::FileLineCol { file, line, col } => {
            write_string(out, file);
            let _ = write!(out, ":{line}:{col}");
        }
        Location::Name { name, child } => {
            write_string(out, name);
            if let Some(child) = child {
                out.push('(');
                write_location(out, child);
                out.push(')');
            }
        }
        Location::CallSite { callee, caller } => {
            out.push_str("callsite(");
            write_location(out, callee);
            out.push_str(" at ");
            write_location(out, caller);
            out.push(')');
        }
        Location::Fused(locs) => {
            out.push_str("fused[");
            for (i, l) in locs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_location(out, l);
            }
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TensorType;
    use bytes::Bytes;

    fn float_text(bits: u64, et: ElementType) -> String {
        let mut out = String::new();
        write_float_bits(&mut out, bits, et);
        out
    }

    #[test]
    fn floats_print_like_mlir() {
        assert_eq!(
            float_text(u64::from(2.0f32.to_bits()), ElementType::F32),
            "2.000000e+00"
        );
        assert_eq!(
            float_text(u64::from(0.1f32.to_bits()), ElementType::F32),
            "1.000000e-01"
        );
        // 1.41421354 needs more than six digits; shortest round-trip form instead.
        assert_eq!(
            float_text(
                u64::from(std::f32::consts::SQRT_2.to_bits()),
                ElementType::F32
            ),
            "1.4142135e+00"
        );
        assert_eq!(float_text(0x7FC0_0000, ElementType::F32), "0x7FC00000");
        assert_eq!(float_text(0xFF80_0000, ElementType::F32), "0xFF800000");
        assert_eq!(float_text(0x3C00, ElementType::F16), "1.000000e+00");
        assert_eq!(float_text(0x7E, ElementType::F8E4M3FN), "0x7E");
    }

    #[test]
    fn dense_forms() {
        let ty = TensorType::new([2, 2], ElementType::S32);
        let data: Vec<u8> = [1i32, -2, 3, 4]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let e = ElementsAttr {
            ty,
            data: Bytes::from(data),
            splat: false,
        };
        assert_eq!(
            print_attribute(&Attribute::Elements(e)),
            "dense<[[1, -2], [3, 4]]> : tensor<2x2xi32>"
        );
        let splat = ElementsAttr {
            ty: TensorType::new([3], ElementType::Pred),
            data: Bytes::from_static(&[1]),
            splat: true,
        };
        assert_eq!(
            print_attribute(&Attribute::Elements(splat)),
            "dense<true> : tensor<3xi1>"
        );
    }

    #[test]
    fn strings_and_symbols_are_escaped() {
        let mut out = String::new();
        write_string(&mut out, "a\"b\n");
        assert_eq!(out, r#""a\"b\0A""#);
        let mut sym = String::new();
        write_symbol(&mut sym, "has space");
        assert_eq!(sym, r#"@"has space""#);
    }
}
