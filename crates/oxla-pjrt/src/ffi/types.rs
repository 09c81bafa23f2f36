//! `PJRT_Buffer_Type` <-> `oxla_ir::ElementType`.

use oxla_client::{ClientError, ElementType, Result};
use pjrt_sys::*;

// Buffer types that later versions of the C API append after `U2` (25); the values are
// part of the ABI, so a newer JAX passes them to a plugin built against the 0.54 header.
const PJRT_BUFFER_TYPE_F8E4M3: PJRT_Buffer_Type = 26;
const PJRT_BUFFER_TYPE_F8E3M4: PJRT_Buffer_Type = 27;
const PJRT_BUFFER_TYPE_F8E8M0FNU: PJRT_Buffer_Type = 28;
const PJRT_BUFFER_TYPE_F4E2M1FN: PJRT_Buffer_Type = 29;

/// The oxla element type of a PJRT buffer type; TOKEN, INVALID and unknown values are errors.
pub(crate) fn element_type(ty: PJRT_Buffer_Type) -> Result<ElementType> {
    Ok(match ty {
        PJRT_Buffer_Type_PJRT_Buffer_Type_PRED => ElementType::Pred,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S2 => ElementType::S2,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S4 => ElementType::S4,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S8 => ElementType::S8,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S16 => ElementType::S16,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S32 => ElementType::S32,
        PJRT_Buffer_Type_PJRT_Buffer_Type_S64 => ElementType::S64,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U2 => ElementType::U2,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U4 => ElementType::U4,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U8 => ElementType::U8,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U16 => ElementType::U16,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U32 => ElementType::U32,
        PJRT_Buffer_Type_PJRT_Buffer_Type_U64 => ElementType::U64,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F16 => ElementType::F16,
        PJRT_Buffer_Type_PJRT_Buffer_Type_BF16 => ElementType::BF16,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F32 => ElementType::F32,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F64 => ElementType::F64,
        PJRT_Buffer_Type_PJRT_Buffer_Type_C64 => ElementType::C64,
        PJRT_Buffer_Type_PJRT_Buffer_Type_C128 => ElementType::C128,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2 => ElementType::F8E5M2,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FN => ElementType::F8E4M3FN,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3B11FNUZ => ElementType::F8E4M3B11FNUZ,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2FNUZ => ElementType::F8E5M2FNUZ,
        PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FNUZ => ElementType::F8E4M3FNUZ,
        PJRT_BUFFER_TYPE_F8E4M3 => ElementType::F8E4M3,
        PJRT_BUFFER_TYPE_F8E3M4 => ElementType::F8E3M4,
        PJRT_BUFFER_TYPE_F8E8M0FNU => ElementType::F8E8M0FNU,
        PJRT_BUFFER_TYPE_F4E2M1FN => ElementType::F4E2M1FN,
        PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN => {
            return Err(ClientError::InvalidArgument(
                "TOKEN is not an array element type".to_string(),
            ))
        }
        PJRT_Buffer_Type_PJRT_Buffer_Type_INVALID => {
            return Err(ClientError::InvalidArgument(
                "buffer type is INVALID".to_string(),
            ))
        }
        other => {
            return Err(ClientError::InvalidArgument(format!(
                "unknown PJRT_Buffer_Type {other}"
            )))
        }
    })
}

/// The PJRT buffer type of an oxla element type; types this header cannot name are errors.
pub(crate) fn buffer_type(ty: ElementType) -> Result<PJRT_Buffer_Type> {
    Ok(match ty {
        ElementType::Pred => PJRT_Buffer_Type_PJRT_Buffer_Type_PRED,
        ElementType::S2 => PJRT_Buffer_Type_PJRT_Buffer_Type_S2,
        ElementType::S4 => PJRT_Buffer_Type_PJRT_Buffer_Type_S4,
        ElementType::S8 => PJRT_Buffer_Type_PJRT_Buffer_Type_S8,
        ElementType::S16 => PJRT_Buffer_Type_PJRT_Buffer_Type_S16,
        ElementType::S32 => PJRT_Buffer_Type_PJRT_Buffer_Type_S32,
        ElementType::S64 => PJRT_Buffer_Type_PJRT_Buffer_Type_S64,
        ElementType::U2 => PJRT_Buffer_Type_PJRT_Buffer_Type_U2,
        ElementType::U4 => PJRT_Buffer_Type_PJRT_Buffer_Type_U4,
        ElementType::U8 => PJRT_Buffer_Type_PJRT_Buffer_Type_U8,
        ElementType::U16 => PJRT_Buffer_Type_PJRT_Buffer_Type_U16,
        ElementType::U32 => PJRT_Buffer_Type_PJRT_Buffer_Type_U32,
        ElementType::U64 => PJRT_Buffer_Type_PJRT_Buffer_Type_U64,
        ElementType::F16 => PJRT_Buffer_Type_PJRT_Buffer_Type_F16,
        ElementType::BF16 => PJRT_Buffer_Type_PJRT_Buffer_Type_BF16,
        ElementType::F32 => PJRT_Buffer_Type_PJRT_Buffer_Type_F32,
        ElementType::F64 => PJRT_Buffer_Type_PJRT_Buffer_Type_F64,
        ElementType::C64 => PJRT_Buffer_Type_PJRT_Buffer_Type_C64,
        ElementType::C128 => PJRT_Buffer_Type_PJRT_Buffer_Type_C128,
        ElementType::F8E5M2 => PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2,
        ElementType::F8E4M3FN => PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FN,
        ElementType::F8E4M3B11FNUZ => PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3B11FNUZ,
        ElementType::F8E5M2FNUZ => PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2FNUZ,
        ElementType::F8E4M3FNUZ => PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FNUZ,
        ElementType::F8E4M3 => PJRT_BUFFER_TYPE_F8E4M3,
        ElementType::F8E3M4 => PJRT_BUFFER_TYPE_F8E3M4,
        ElementType::F8E8M0FNU => PJRT_BUFFER_TYPE_F8E8M0FNU,
        ElementType::F4E2M1FN => PJRT_BUFFER_TYPE_F4E2M1FN,
        other => {
            return Err(ClientError::Unimplemented(format!(
                "element type {other} has no PJRT_Buffer_Type"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nameable_type_round_trips() {
        let mut n_mapped = 0;
        for ty in ElementType::ALL {
            if let Ok(pjrt) = buffer_type(ty) {
                assert_eq!(element_type(pjrt).unwrap(), ty);
                n_mapped += 1;
            }
        }
        // Every type but the 6-bit floats, which the C API cannot name.
        assert_eq!(n_mapped, 28);
        assert!(element_type(PJRT_Buffer_Type_PJRT_Buffer_Type_TOKEN).is_err());
        assert!(element_type(PJRT_Buffer_Type_PJRT_Buffer_Type_INVALID).is_err());
        assert!(element_type(999).is_err());
    }
}
