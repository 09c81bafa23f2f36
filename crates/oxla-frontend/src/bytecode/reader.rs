//! A bounds-checked cursor over MLIR bytecode: bytes, prefix varints, zigzag varints,
//! null-terminated strings, alignment padding and nested sections.
//!
//! Every read checks the remaining length first, so malformed input yields an error that names
//! the absolute byte offset in the file, never a panic or an allocation sized by the input.

use crate::FrontendError;

/// The byte MLIR writes into alignment padding.
const ALIGNMENT_BYTE: u8 = 0xCB;

/// The largest section or blob alignment accepted (MLIR's own writers use at most a few KiB).
const MAX_ALIGNMENT: u64 = 1 << 16;

/// Builds a [`FrontendError::Bytecode`].
pub(crate) fn error(offset: usize, detail: impl Into<String>) -> FrontendError {
    FrontendError::Bytecode {
        offset,
        detail: detail.into(),
    }
}

/// Result alias for the bytecode reader.
pub(crate) type Result<T> = std::result::Result<T, FrontendError>;

/// A read position inside a slice of the file; `base` is the slice's offset in the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, which starts at file offset `base`.
    pub(crate) fn new(data: &'a [u8], base: usize) -> Cursor<'a> {
        Cursor { data, pos: 0, base }
    }

    /// The absolute file offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// An error at the current position.
    pub(crate) fn err(&self, detail: impl Into<String>) -> FrontendError {
        error(self.offset(), detail)
    }

    /// True when every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Reads one byte.
    pub(crate) fn byte(&mut self) -> Result<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.err("unexpected end of data")),
        }
    }

    /// Reads `len` bytes as a sub-slice (no copy).
    pub(crate) fn bytes(&mut self, len: u64) -> Result<&'a [u8]> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.remaining())
            .ok_or_else(|| {
                self.err(format!(
                    "length {len} exceeds the {} bytes left",
                    self.remaining()
                ))
            })?;
        let out = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    /// Reads `len` bytes as a cursor of its own (offsets stay absolute).
    pub(crate) fn sub(&mut self, len: u64) -> Result<Cursor<'a>> {
        let base = self.offset();
        Ok(Cursor::new(self.bytes(len)?, base))
    }

    /// Reads a PrefixVarInt: the count of trailing zero bits of the first byte is the number
    /// of extra bytes; a zero first byte means eight extra bytes holding the whole value.
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let first = self.byte()?;
        if first & 1 == 1 {
            return Ok(u64::from(first >> 1));
        }
        if first == 0 {
            let raw = self.bytes(8)?;
            let mut le = [0u8; 8];
            le.copy_from_slice(raw);
            return Ok(u64::from_le_bytes(le));
        }
        let n_extra = first.trailing_zeros() as usize;
        let raw = self.bytes(n_extra as u64)?;
        let mut le = [0u8; 8];
        le[0] = first;
        le[1..=n_extra].copy_from_slice(raw);
        Ok(u64::from_le_bytes(le) >> (n_extra + 1))
    }

    /// Reads a zigzag-encoded signed varint.
    pub(crate) fn svarint(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// Reads a varint whose low bit is a flag: returns `(value >> 1, flag)`.
    pub(crate) fn varint_flag(&mut self) -> Result<(u64, bool)> {
        let v = self.varint()?;
        Ok((v >> 1, v & 1 == 1))
    }

    /// Reads a varint used as a count or index, as `usize`.
    pub(crate) fn varint_usize(&mut self) -> Result<usize> {
        let at = self.offset();
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| error(at, format!("value {v} too large")))
    }

    /// Reads a varint count of items that each take at least one byte, rejecting counts that
    /// cannot fit in the bytes left (so callers may reserve capacity for it).
    pub(crate) fn count(&mut self) -> Result<usize> {
        let at = self.offset();
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(error(
                at,
                format!("count {n} exceeds the {} bytes left", self.remaining()),
            ));
        }
        Ok(n as usize)
    }

    /// Reads a null-terminated string (without the terminator), as bytes.
    pub(crate) fn null_terminated(&mut self) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.err("string has no null terminator"))?;
        self.pos += nul + 1;
        Ok(&rest[..nul])
    }

    /// Skips `0xCB` padding until the absolute file offset is a multiple of `alignment`.
    pub(crate) fn align(&mut self, alignment: u64) -> Result<()> {
        if alignment == 0 || !alignment.is_power_of_two() || alignment > MAX_ALIGNMENT {
            return Err(self.err(format!("invalid alignment {alignment}")));
        }
        let alignment = alignment as usize;
        while self.offset() & (alignment - 1) != 0 {
            let b = self.byte()?;
            if b != ALIGNMENT_BYTE {
                return Err(error(
                    self.offset() - 1,
                    format!("expected alignment byte 0xCB, found {b:#04x}"),
                ));
            }
        }
        Ok(())
    }

    /// Reads a section header and returns `(id, contents)`.
    pub(crate) fn section(&mut self) -> Result<(u8, Cursor<'a>)> {
        let id_and_align = self.byte()?;
        let len = self.varint()?;
        if id_and_align & 0x80 != 0 {
            let alignment = self.varint()?;
            self.align(alignment)?;
        }
        Ok((id_and_align & 0x7F, self.sub(len)?))
    }

    /// Reads a blob: a varint length followed by that many bytes.
    pub(crate) fn blob(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        self.bytes(len)
    }

    /// The file offset at which this cursor's data starts.
    pub(crate) fn base(&self) -> usize {
        self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_varints_decode_per_the_format() {
        // 1 byte: value 5 -> (5 << 1) | 1.
        assert_eq!(Cursor::new(&[0x0B], 0).varint().unwrap(), 5);
        // 2 bytes: value 300 -> (300 << 2) | 0b10 = 1202 = 0x04B2, little-endian.
        assert_eq!(Cursor::new(&[0xB2, 0x04], 0).varint().unwrap(), 300);
        // 9 bytes: marker 0 then the full little-endian u64.
        let mut nine = vec![0u8];
        nine.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Cursor::new(&nine, 0).varint().unwrap(), u64::MAX);
        // Zigzag: 3 decodes to -2, 4 decodes to 2.
        assert_eq!(Cursor::new(&[0x07], 0).svarint().unwrap(), -2);
        assert_eq!(Cursor::new(&[0x09], 0).svarint().unwrap(), 2);
    }

    #[test]
    fn truncated_varint_is_an_error_with_offset() {
        let err = Cursor::new(&[0x02], 10).varint().unwrap_err();
        assert!(matches!(err, FrontendError::Bytecode { offset: 11, .. }));
    }

    #[test]
    fn oversized_lengths_are_rejected() {
        let mut c = Cursor::new(&[0xFF, 1, 2], 0);
        assert!(c.bytes(u64::MAX).is_err());
        assert!(Cursor::new(&[0x0F, 0], 0).count().is_err());
    }
}
