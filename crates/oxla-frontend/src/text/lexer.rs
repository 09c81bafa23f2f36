//! The tokenizer for MLIR / StableHLO text: turns bytes into tokens with byte offsets.
//!
//! The lexer is pulled one token at a time and can be repositioned, because a few
//! constructs (tensor shapes such as `2x3xf32`, opaque dialect attribute bodies) are
//! scanned character by character by the parser.

use crate::FrontendError;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokKind {
    /// `%name` (the text after `%`).
    Percent,
    /// `@name` or `@"name"`.
    At,
    /// `^name`.
    Caret,
    /// `#name`.
    Hash,
    /// `!name`.
    Bang,
    /// A bare identifier or keyword (`stablehlo.add`, `tensor`, `f32`, `x`).
    Bare,
    /// An integer literal (decimal or `0x` hexadecimal).
    Integer,
    /// A floating-point literal.
    Float,
    /// A string literal (the span includes the quotes).
    String,
    LParen,
    RParen,
    LSquare,
    RSquare,
    LBrace,
    RBrace,
    Less,
    Greater,
    Comma,
    Colon,
    ColonColon,
    Equal,
    Arrow,
    Question,
    Star,
    Plus,
    Minus,
    /// `{-#`, opening the file metadata dictionary.
    FileMetaStart,
    /// `#-}`, closing it.
    FileMetaEnd,
    /// End of input.
    Eof,
}

/// A token: its kind and byte span in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// The kind.
    pub kind: TokKind,
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset one past the last character.
    pub end: usize,
}

/// True for characters that may continue an identifier (`[a-zA-Z0-9_$.-]`).
fn is_id_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

/// True for characters that may continue a bare identifier (`[a-zA-Z0-9_$.]`).
fn is_bare_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Converts a byte offset into a 1-based (line, column) pair, counting columns in characters.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

/// Builds a text error at a byte offset.
pub fn error_at(src: &str, offset: usize, detail: impl Into<String>) -> FrontendError {
    let (line, col) = line_col(src, offset);
    FrontendError::Text {
        line,
        col,
        detail: detail.into(),
    }
}

/// A pull lexer over a source string.
#[derive(Clone)]
pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src, pos: 0 }
    }

    /// The source text.
    pub fn src(&self) -> &'a str {
        self.src
    }

    /// The current byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to byte offset `pos`.
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.src.len());
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.bytes().get(self.pos + ahead).copied()
    }

    /// Skips whitespace and `//` comments.
    pub fn skip_trivia(&mut self) {
        loop {
            match self.peek_byte(0) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.peek_byte(1) == Some(b'/') => {
                    while let Some(c) = self.peek_byte(0) {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn err(&self, offset: usize, detail: impl Into<String>) -> FrontendError {
        error_at(self.src, offset, detail)
    }

    /// Lexes the next token.
    pub fn next_token(&mut self) -> Result<Token, FrontendError> {
        self.skip_trivia();
        let start = self.pos;
        let Some(c) = self.peek_byte(0) else {
            return Ok(Token {
                kind: TokKind::Eof,
                start,
                end: start,
            });
        };
        let single = |kind| (kind, 1usize);
        let (kind, len) = match c {
            b'(' => single(TokKind::LParen),
            b')' => single(TokKind::RParen),
            b'[' => single(TokKind::LSquare),
            b']' => single(TokKind::RSquare),
            b'{' => {
                if self.peek_byte(1) == Some(b'-') && self.peek_byte(2) == Some(b'#') {
                    (TokKind::FileMetaStart, 3)
                } else {
                    single(TokKind::LBrace)
                }
            }
            b'}' => single(TokKind::RBrace),
            b'<' => single(TokKind::Less),
            b'>' => single(TokKind::Greater),
            b',' => single(TokKind::Comma),
            b':' => {
                if self.peek_byte(1) == Some(b':') {
                    (TokKind::ColonColon, 2)
                } else {
                    single(TokKind::Colon)
                }
            }
            b'=' => single(TokKind::Equal),
            b'?' => single(TokKind::Question),
            b'*' => single(TokKind::Star),
            b'+' => single(TokKind::Plus),
            b'-' => {
                if self.peek_byte(1) == Some(b'>') {
                    (TokKind::Arrow, 2)
                } else {
                    single(TokKind::Minus)
                }
            }
            b'"' => {
                let len = self.scan_string(start)?;
                (TokKind::String, len)
            }
            b'%' | b'^' | b'!' | b'#' => {
                if c == b'#' && self.peek_byte(1) == Some(b'-') && self.peek_byte(2) == Some(b'}') {
                    (TokKind::FileMetaEnd, 3)
                } else {
                    let kind = match c {
                        b'%' => TokKind::Percent,
                        b'^' => TokKind::Caret,
                        b'!' => TokKind::Bang,
                        _ => TokKind::Hash,
                    };
                    let mut n = 1;
                    while self.peek_byte(n).is_some_and(is_id_continue) {
                        n += 1;
                    }
                    if n == 1 {
                        return Err(self.err(
                            start,
                            format!("expected an identifier after '{}'", c as char),
                        ));
                    }
                    (kind, n)
                }
            }
            b'@' => {
                if self.peek_byte(1) == Some(b'"') {
                    self.pos += 1;
                    let len = self.scan_string(start + 1)?;
                    self.pos = start;
                    (TokKind::At, len + 1)
                } else {
                    let mut n = 1;
                    while self.peek_byte(n).is_some_and(is_id_continue) {
                        n += 1;
                    }
                    if n == 1 {
                        return Err(self.err(start, "expected a symbol name after '@'"));
                    }
                    (TokKind::At, n)
                }
            }
            b'0'..=b'9' => self.scan_number(),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut n = 1;
                while self.peek_byte(n).is_some_and(is_bare_continue) {
                    n += 1;
                }
                (TokKind::Bare, n)
            }
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('?');
                return Err(self.err(start, format!("unexpected character {ch:?}")));
            }
        };
        self.pos = start + len;
        Ok(Token {
            kind,
            start,
            end: start + len,
        })
    }

    /// Scans a string literal starting at `start` (a `"`); returns its length with quotes.
    fn scan_string(&self, start: usize) -> Result<usize, FrontendError> {
        let bytes = self.bytes();
        let mut i = start + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => return Ok(i + 1 - start),
                b'\\' => i += 2,
                b'\n' => return Err(self.err(start, "unterminated string literal")),
                _ => i += 1,
            }
        }
        Err(self.err(start, "unterminated string literal"))
    }

    /// Scans a number at the current position; returns its kind and length.
    fn scan_number(&self) -> (TokKind, usize) {
        let bytes = &self.bytes()[self.pos..];
        let digits = |from: usize| {
            let mut n = from;
            while n < bytes.len() && bytes[n].is_ascii_digit() {
                n += 1;
            }
            n
        };
        if bytes.len() > 2 && bytes[0] == b'0' && bytes[1] == b'x' && bytes[2].is_ascii_hexdigit() {
            let mut n = 2;
            while n < bytes.len() && bytes[n].is_ascii_hexdigit() {
                n += 1;
            }
            return (TokKind::Integer, n);
        }
        let mut n = digits(0);
        if n < bytes.len() && bytes[n] == b'.' {
            n = digits(n + 1);
            if n < bytes.len() && (bytes[n] == b'e' || bytes[n] == b'E') {
                let mut m = n + 1;
                if m < bytes.len() && (bytes[m] == b'+' || bytes[m] == b'-') {
                    m += 1;
                }
                if m < bytes.len() && bytes[m].is_ascii_digit() {
                    n = digits(m);
                }
            }
            return (TokKind::Float, n);
        }
        (TokKind::Integer, n)
    }
}

/// Decodes the contents of a string token (with quotes) into its bytes.
pub fn unescape_string(raw: &str) -> Vec<u8> {
    let inner = &raw.as_bytes()[1..raw.len().saturating_sub(1).max(1)];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == b'\\' && i + 1 < inner.len() {
            let next = inner[i + 1];
            match next {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'\\' => out.push(b'\\'),
                b'"' => out.push(b'"'),
                _ => {
                    let hex = |b: u8| (b as char).to_digit(16);
                    if let (Some(hi), Some(lo)) =
                        (hex(next), inner.get(i + 2).and_then(|&b| hex(b)))
                    {
                        out.push((hi * 16 + lo) as u8);
                        i += 3;
                        continue;
                    }
                    out.push(next);
                }
            }
            i += 2;
        } else {
            out.push(inner[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokKind> {
        let mut lexer = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let tok = lexer.next_token().expect("lexes");
            out.push(tok.kind);
            if tok.kind == TokKind::Eof {
                return out;
            }
        }
    }

    #[test]
    fn lexes_punctuation_and_ids() {
        use TokKind::*;
        assert_eq!(
            kinds(
                "%0:2 = stablehlo.add %a#1, @f -> {-# #-} // comment\n 1.5e+3 0x7FC00000 \"s\\\"\""
            ),
            vec![
                Percent,
                Colon,
                Integer,
                Equal,
                Bare,
                Percent,
                Hash,
                Comma,
                At,
                Arrow,
                FileMetaStart,
                FileMetaEnd,
                Float,
                Integer,
                String,
                Eof
            ]
        );
    }

    #[test]
    fn reports_line_and_column() {
        let mut lexer = Lexer::new("a\n  $");
        lexer.next_token().expect("first token");
        let err = lexer.next_token().expect_err("bad char");
        assert!(
            matches!(
                err,
                FrontendError::Text {
                    line: 2,
                    col: 3,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn unescapes_strings() {
        assert_eq!(unescape_string(r#""a\"b\0A\\""#), b"a\"b\n\\".to_vec());
    }
}
