//! The parser core: tokens, types, attributes, locations, modules, functions, regions and
//! the generic op syntax. Op-specific pretty syntax lives in [`super::ops`].
//!
//! Nesting (regions, attributes, dense literals, locations) is bounded by [`MAX_DEPTH`], so
//! hostile input cannot overflow the stack. Aliases (`#loc1 = ...`, `!t = ...`) and the
//! `{-# dialect_resources ... #-}` trailer are collected by a first pass, so they may be
//! used before they are defined, as MLIR's own printer emits them.

use super::dense::{self, DenseLiteral, Scalar};
use super::lexer::{error_at, unescape_string, Lexer, TokKind, Token};
use crate::FrontendError;
use oxla_ir::attrs::{
    ComparisonDirection, ComparisonType, FftType, Precision, RngAlgorithm, RngDistribution,
    Transpose,
};
use oxla_ir::{
    Attribute, Block, ElementType, Function, FunctionType, Location, Module, NamedAttribute, Op,
    OpKind, Region, TensorType, Type, ValueId, Visibility, DYNAMIC,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Deepest nesting of regions, attributes, types and locations the parser accepts.
pub const MAX_DEPTH: usize = 128;

/// Result alias for the parser.
pub type PResult<T> = Result<T, FrontendError>;

/// A type, or a function type where one is allowed.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeOrFn {
    /// A plain type.
    Type(Type),
    /// `(inputs) -> results`.
    Function(FunctionType),
}

/// The parser state.
pub struct Parser<'a> {
    pub(super) lex: Lexer<'a>,
    pub(super) tok: Token,
    depth: usize,
    attr_aliases: HashMap<String, usize>,
    type_aliases: HashMap<String, usize>,
    loc_cache: HashMap<String, Location>,
    resolving: HashSet<String>,
    resources: HashMap<String, Vec<u8>>,
    /// The function being built.
    pub(super) func: Function,
    /// Value names visible at this point, innermost region last.
    scopes: Vec<HashMap<String, Vec<ValueId>>>,
}

/// Parses a whole StableHLO text file.
pub fn parse_module(src: &str) -> PResult<Module> {
    let mut parser = Parser::new(src)?;
    parser.prepass()?;
    parser.seek(0)?;
    parser.parse_top_level()
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> PResult<Parser<'a>> {
        let mut lex = Lexer::new(src);
        let tok = lex.next_token()?;
        Ok(Parser {
            lex,
            tok,
            depth: 0,
            attr_aliases: HashMap::new(),
            type_aliases: HashMap::new(),
            loc_cache: HashMap::new(),
            resolving: HashSet::new(),
            resources: HashMap::new(),
            func: Function::default(),
            scopes: Vec::new(),
        })
    }

    // ----- token helpers -----

    /// The source text of a token.
    pub(super) fn text(&self, tok: Token) -> &'a str {
        &self.lex.src()[tok.start..tok.end]
    }

    /// The text of the current token.
    pub(super) fn cur(&self) -> &'a str {
        self.text(self.tok)
    }

    /// Advances to the next token.
    pub(super) fn bump(&mut self) -> PResult<Token> {
        let prev = self.tok;
        self.tok = self.lex.next_token()?;
        Ok(prev)
    }

    /// Moves to byte offset `pos` and lexes the token there.
    pub(super) fn seek(&mut self, pos: usize) -> PResult<()> {
        self.lex.seek(pos);
        self.tok = self.lex.next_token()?;
        Ok(())
    }

    /// The kind of the token after the current one.
    pub(super) fn peek_kind(&self) -> PResult<TokKind> {
        let mut lex = self.lex.clone();
        Ok(lex.next_token()?.kind)
    }

    pub(super) fn at(&self, kind: TokKind) -> bool {
        self.tok.kind == kind
    }

    pub(super) fn at_bare(&self, word: &str) -> bool {
        self.tok.kind == TokKind::Bare && self.cur() == word
    }

    pub(super) fn eat(&mut self, kind: TokKind) -> PResult<bool> {
        if self.at(kind) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(super) fn eat_bare(&mut self, word: &str) -> PResult<bool> {
        if self.at_bare(word) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// An error at the current token.
    pub(super) fn err(&self, detail: impl Into<String>) -> FrontendError {
        error_at(self.lex.src(), self.tok.start, detail)
    }

    /// An error at a byte offset.
    pub(super) fn err_at(&self, offset: usize, detail: impl Into<String>) -> FrontendError {
        error_at(self.lex.src(), offset, detail)
    }

    /// A description of the current token for error messages.
    pub(super) fn found(&self) -> String {
        if self.at(TokKind::Eof) {
            "end of input".to_string()
        } else {
            let text = self.cur();
            let shown: String = text.chars().take(40).collect();
            format!("'{shown}'")
        }
    }

    /// "expected X, found Y" at the current token.
    pub(super) fn expected(&self, what: &str) -> FrontendError {
        self.err(format!("expected {what}, found {}", self.found()))
    }

    pub(super) fn expect(&mut self, kind: TokKind, what: &str) -> PResult<Token> {
        if self.at(kind) {
            self.bump()
        } else {
            Err(self.expected(what))
        }
    }

    pub(super) fn expect_bare(&mut self, word: &str) -> PResult<()> {
        if self.eat_bare(word)? {
            Ok(())
        } else {
            Err(self.expected(&format!("'{word}'")))
        }
    }

    /// Enters one nesting level, failing beyond [`MAX_DEPTH`].
    pub(super) fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Runs `f` with the parser moved to an alias definition, then restores the position.
    fn with_alias<T>(
        &mut self,
        name: &str,
        pos: usize,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        if !self.resolving.insert(name.to_string()) {
            return Err(self.err(format!("alias {name} refers to itself")));
        }
        self.enter()?;
        let saved_pos = self.lex.pos();
        let saved_tok = self.tok;
        let result = self.seek(pos).and_then(|()| f(self));
        self.lex.seek(saved_pos);
        self.tok = saved_tok;
        self.leave();
        self.resolving.remove(name);
        result
    }

    // ----- numbers -----

    /// Parses an optionally negative integer literal as (negative, magnitude, hex).
    pub(super) fn parse_int_parts(&mut self) -> PResult<(bool, u128, bool)> {
        let negative = self.eat(TokKind::Minus)?;
        if !self.at(TokKind::Integer) {
            return Err(self.expected("an integer"));
        }
        let text = self.cur();
        let (digits, radix, hex) = match text.strip_prefix("0x") {
            Some(h) => (h, 16, true),
            None => (text, 10, false),
        };
        let magnitude = u128::from_str_radix(digits, radix)
            .ok()
            .filter(|&m| hex || m <= u128::from(u64::MAX))
            .ok_or_else(|| self.err(format!("integer literal {text} is too large")))?;
        self.bump()?;
        Ok((negative, magnitude, hex))
    }

    /// Parses an integer that must fit an `i64`.
    pub(super) fn parse_i64(&mut self) -> PResult<i64> {
        let start = self.tok.start;
        let (negative, magnitude, _) = self.parse_int_parts()?;
        let value = if negative {
            -(magnitude as i128)
        } else {
            magnitude as i128
        };
        i64::try_from(value).map_err(|_| self.err_at(start, "integer does not fit in 64 bits"))
    }

    /// Parses `[i, j, ...]` (or `array<i64: ...>`) into a list of i64.
    pub(super) fn parse_i64_list(&mut self) -> PResult<Vec<i64>> {
        if self.at_bare("array") {
            return match self.parse_attribute()? {
                Attribute::DenseI64Array(v) => Ok(v),
                _ => Err(self.err("expected array<i64: ...>")),
            };
        }
        self.expect(TokKind::LSquare, "'['")?;
        let mut out = Vec::new();
        if !self.eat(TokKind::RSquare)? {
            loop {
                out.push(self.parse_i64()?);
                if self.eat(TokKind::RSquare)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ']'")?;
            }
        }
        Ok(out)
    }

    /// Parses `true`/`false`.
    pub(super) fn parse_bool(&mut self) -> PResult<bool> {
        if self.eat_bare("true")? {
            Ok(true)
        } else if self.eat_bare("false")? {
            Ok(false)
        } else {
            Err(self.expected("'true' or 'false'"))
        }
    }

    /// Parses a string literal into its text.
    pub(super) fn parse_string(&mut self) -> PResult<String> {
        let tok = self.expect(TokKind::String, "a string")?;
        let bytes = unescape_string(self.text(tok));
        String::from_utf8(bytes).map_err(|_| self.err_at(tok.start, "string is not valid UTF-8"))
    }

    /// Parses a symbol name `@name` (or `@"name"`), returning it without `@`.
    pub(super) fn parse_symbol(&mut self) -> PResult<String> {
        let tok = self.expect(TokKind::At, "a symbol name '@...'")?;
        let text = &self.text(tok)[1..];
        if text.starts_with('"') {
            String::from_utf8(unescape_string(text))
                .map_err(|_| self.err_at(tok.start, "symbol is not valid UTF-8"))
        } else {
            Ok(text.to_string())
        }
    }

    // ----- types -----

    /// Parses a type (not a function type).
    pub(super) fn parse_type(&mut self) -> PResult<Type> {
        match self.parse_type_or_fn()? {
            TypeOrFn::Type(t) => Ok(t),
            TypeOrFn::Function(_) => Err(self.err("expected a type, found a function type")),
        }
    }

    /// Parses a type or a function type `(A, B) -> C`.
    pub(super) fn parse_type_or_fn(&mut self) -> PResult<TypeOrFn> {
        self.enter()?;
        let res = self.parse_type_or_fn_inner();
        self.leave();
        res
    }

    fn parse_type_or_fn_inner(&mut self) -> PResult<TypeOrFn> {
        let start = self.tok.start;
        match self.tok.kind {
            TokKind::LParen => {
                self.bump()?;
                let mut inputs = Vec::new();
                if !self.eat(TokKind::RParen)? {
                    loop {
                        inputs.push(self.parse_type()?);
                        if self.eat(TokKind::RParen)? {
                            break;
                        }
                        self.expect(TokKind::Comma, "',' or ')' in a type list")?;
                    }
                }
                self.expect(TokKind::Arrow, "'->' of a function type")?;
                let results = self.parse_result_types()?;
                Ok(TypeOrFn::Function(FunctionType { inputs, results }))
            }
            TokKind::Bang => {
                let text = self.cur();
                if text == "!stablehlo.token" {
                    self.bump()?;
                    return Ok(TypeOrFn::Type(Type::Token));
                }
                if let Some(&pos) = self.type_aliases.get(text) {
                    let name = text.to_string();
                    self.bump()?;
                    return self.with_alias(&name, pos, |p| p.parse_type_or_fn());
                }
                self.bump()?;
                if self.at(TokKind::Less) && self.tok.start == start + text.len() {
                    self.skip_balanced_angle()?;
                }
                Ok(TypeOrFn::Type(Type::Opaque(
                    self.lex.src()[start..self.prev_end()].to_string(),
                )))
            }
            TokKind::Bare => {
                let word = self.cur();
                match word {
                    "tensor" => {
                        self.bump()?;
                        self.parse_tensor_body(start).map(TypeOrFn::Type)
                    }
                    "tuple" => {
                        self.bump()?;
                        self.expect(TokKind::Less, "'<' after 'tuple'")?;
                        let mut elems = Vec::new();
                        if !self.eat(TokKind::Greater)? {
                            loop {
                                elems.push(self.parse_type()?);
                                if self.eat(TokKind::Greater)? {
                                    break;
                                }
                                self.expect(TokKind::Comma, "',' or '>' in a tuple type")?;
                            }
                        }
                        Ok(TypeOrFn::Type(Type::Tuple(elems)))
                    }
                    "index" => {
                        self.bump()?;
                        Ok(TypeOrFn::Type(Type::Index))
                    }
                    "complex" => {
                        let et = self.parse_element_type()?;
                        Ok(TypeOrFn::Type(Type::Scalar(et)))
                    }
                    "none" => {
                        self.bump()?;
                        Ok(TypeOrFn::Type(Type::Opaque("none".to_string())))
                    }
                    _ => {
                        if let Some(et) = ElementType::from_name(word) {
                            self.bump()?;
                            return Ok(TypeOrFn::Type(Type::Scalar(et)));
                        }
                        if matches!(word, "memref" | "vector") {
                            self.bump()?;
                            self.skip_balanced_angle()?;
                            return Ok(TypeOrFn::Type(Type::Opaque(
                                self.lex.src()[start..self.prev_end()].to_string(),
                            )));
                        }
                        Err(self.expected("a type"))
                    }
                }
            }
            _ => Err(self.expected("a type")),
        }
    }

    /// The end offset of the last consumed token (start of trivia before the current one).
    pub(super) fn prev_end(&self) -> usize {
        let src = self.lex.src().as_bytes();
        let mut end = self.tok.start;
        while end > 0 && src[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        end
    }

    /// Parses the results of a function type: one type or a parenthesized list.
    pub(super) fn parse_result_types(&mut self) -> PResult<Vec<Type>> {
        if self.eat(TokKind::LParen)? {
            let mut out = Vec::new();
            if !self.eat(TokKind::RParen)? {
                loop {
                    out.push(self.parse_type()?);
                    if self.eat(TokKind::RParen)? {
                        break;
                    }
                    self.expect(TokKind::Comma, "',' or ')' in a type list")?;
                }
            }
            Ok(out)
        } else {
            Ok(vec![self.parse_type()?])
        }
    }

    /// Parses an element type name (`f32`, `ui8`, `complex<f32>`).
    fn parse_element_type(&mut self) -> PResult<ElementType> {
        if self.eat_bare("complex")? {
            self.expect(TokKind::Less, "'<' after 'complex'")?;
            let inner = self.parse_element_type()?;
            self.expect(TokKind::Greater, "'>' closing complex<...>")?;
            return match inner {
                ElementType::F32 => Ok(ElementType::C64),
                ElementType::F64 => Ok(ElementType::C128),
                _ => Err(self.err(format!("unsupported complex element type {inner}"))),
            };
        }
        if self.at(TokKind::Bare) {
            if let Some(et) = ElementType::from_name(self.cur()) {
                self.bump()?;
                return Ok(et);
            }
        }
        Err(self.expected("an element type"))
    }

    /// Parses `<dims x element-type [, encoding]>` after `tensor`.
    fn parse_tensor_body(&mut self, type_start: usize) -> PResult<Type> {
        if !self.at(TokKind::Less) {
            return Err(self.expected("'<' after 'tensor'"));
        }
        // Scan the dimension list character by character: `2x3xf32` is not tokenizable.
        let src = self.lex.src().as_bytes();
        let mut pos = self.tok.end;
        let mut shape = Vec::new();
        let mut unranked = false;
        loop {
            while pos < src.len() && src[pos].is_ascii_whitespace() {
                pos += 1;
            }
            let dim_start = pos;
            if pos < src.len() && src[pos].is_ascii_digit() {
                while pos < src.len() && src[pos].is_ascii_digit() {
                    pos += 1;
                }
                let digits = &self.lex.src()[dim_start..pos];
                let extent: i64 = digits
                    .parse()
                    .map_err(|_| self.err_at(dim_start, "dimension size too large"))?;
                shape.push(extent);
            } else if pos < src.len() && (src[pos] == b'?' || src[pos] == b'*') {
                if src[pos] == b'*' {
                    unranked = true;
                } else {
                    shape.push(DYNAMIC);
                }
                pos += 1;
            } else {
                break;
            }
            if pos < src.len() && src[pos] == b'x' {
                pos += 1;
            } else {
                return Err(self.err_at(pos, "expected 'x' after a dimension size"));
            }
        }
        self.seek(pos)?;
        let mut opaque = unranked;
        let element_type = if self.at_bare("index") || self.at(TokKind::Bang) {
            opaque = true;
            self.parse_type()?;
            None
        } else {
            Some(self.parse_element_type()?)
        };
        if self.eat(TokKind::Comma)? {
            // An encoding (bounds, sparsity): kept as text.
            self.parse_attribute()?;
            opaque = true;
        }
        self.expect(TokKind::Greater, "'>' closing the tensor type")?;
        match (opaque, element_type) {
            (false, Some(et)) => Ok(Type::Tensor(TensorType::new(shape, et))),
            _ => Ok(Type::Opaque(
                self.lex.src()[type_start..self.prev_end()].to_string(),
            )),
        }
    }

    /// Skips a balanced `<...>` starting at the current `<` token, character by character.
    /// Strings are skipped whole; `->` does not close a bracket.
    pub(super) fn skip_balanced_angle(&mut self) -> PResult<()> {
        if !self.at(TokKind::Less) {
            return Err(self.expected("'<'"));
        }
        let src = self.lex.src().as_bytes();
        let open = self.tok.start;
        let mut stack: Vec<u8> = Vec::new();
        let mut pos = open;
        while pos < src.len() {
            let c = src[pos];
            match c {
                b'"' => {
                    pos += 1;
                    while pos < src.len() && src[pos] != b'"' {
                        if src[pos] == b'\\' {
                            pos += 1;
                        }
                        pos += 1;
                    }
                }
                b'-' if src.get(pos + 1) == Some(&b'>') => pos += 1,
                b'<' | b'(' | b'[' | b'{' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(
                            self.err_at(pos, format!("nesting deeper than {MAX_DEPTH} levels"))
                        );
                    }
                    stack.push(match c {
                        b'<' => b'>',
                        b'(' => b')',
                        b'[' => b']',
                        _ => b'}',
                    });
                }
                b'>' | b')' | b']' | b'}' => {
                    if stack.pop() != Some(c) {
                        return Err(self.err_at(pos, format!("unbalanced '{}'", c as char)));
                    }
                    if stack.is_empty() {
                        return self.seek(pos + 1);
                    }
                }
                _ => {}
            }
            pos += 1;
        }
        Err(self.err_at(open, "unterminated '<'"))
    }

    // ----- attributes -----

    /// Parses an attribute value.
    pub(super) fn parse_attribute(&mut self) -> PResult<Attribute> {
        self.enter()?;
        let res = self.parse_attribute_inner();
        self.leave();
        res
    }

    fn parse_attribute_inner(&mut self) -> PResult<Attribute> {
        let start = self.tok.start;
        match self.tok.kind {
            TokKind::Integer | TokKind::Minus | TokKind::Float => self.parse_number_attr(),
            TokKind::String => {
                // A string's escapes may spell bytes that are not UTF-8 (a callback handle).
                let tok = self.expect(TokKind::String, "a string")?;
                Ok(match String::from_utf8(unescape_string(self.text(tok))) {
                    Ok(s) => Attribute::String(s),
                    Err(e) => Attribute::Bytes(e.into_bytes()),
                })
            }
            TokKind::LSquare => {
                self.bump()?;
                let mut items = Vec::new();
                if !self.eat(TokKind::RSquare)? {
                    loop {
                        items.push(self.parse_attribute()?);
                        if self.eat(TokKind::RSquare)? {
                            break;
                        }
                        self.expect(TokKind::Comma, "',' or ']' in an array attribute")?;
                    }
                }
                Ok(Attribute::Array(items))
            }
            TokKind::LBrace => Ok(Attribute::Dictionary(self.parse_attr_dict()?)),
            TokKind::At => {
                let mut name = self.parse_symbol()?;
                while self.eat(TokKind::ColonColon)? {
                    name.push_str("::");
                    name.push_str(&self.parse_symbol()?);
                }
                Ok(Attribute::SymbolRef(name))
            }
            TokKind::Hash => self.parse_hash_attr(),
            TokKind::LParen | TokKind::Bang => match self.parse_type_or_fn()? {
                TypeOrFn::Type(t) => Ok(Attribute::Type(t)),
                TypeOrFn::Function(f) => Ok(Attribute::Opaque(self.function_type_text(&f))),
            },
            TokKind::Bare => match self.cur() {
                "true" => {
                    self.bump()?;
                    Ok(Attribute::Bool(true))
                }
                "false" => {
                    self.bump()?;
                    Ok(Attribute::Bool(false))
                }
                "unit" => {
                    self.bump()?;
                    Ok(Attribute::Unit)
                }
                "dense" => {
                    let (attr, _) = self.parse_dense_attr()?;
                    Ok(attr)
                }
                "dense_resource" => {
                    let (attr, _) = self.parse_dense_resource_attr()?;
                    Ok(attr)
                }
                "array" => self.parse_dense_array(),
                "affine_map" | "affine_set" | "strided" | "sparse" | "opaque" | "distinct" => {
                    self.bump()?;
                    if self.eat(TokKind::LSquare)? {
                        self.parse_i64()?;
                        self.expect(TokKind::RSquare, "']'")?;
                    }
                    self.skip_balanced_angle()?;
                    Ok(Attribute::Opaque(
                        self.lex.src()[start..self.prev_end()].to_string(),
                    ))
                }
                _ => Ok(Attribute::Type(self.parse_type()?)),
            },
            _ => Err(self.expected("an attribute")),
        }
    }

    /// Prints a function type the way MLIR does, for keeping it as opaque text.
    fn function_type_text(&self, f: &FunctionType) -> String {
        let join = |ts: &[Type]| {
            ts.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if f.results.len() == 1 && !matches!(f.results[0], Type::Opaque(_)) {
            format!("({}) -> {}", join(&f.inputs), f.results[0])
        } else {
            format!("({}) -> ({})", join(&f.inputs), join(&f.results))
        }
    }

    /// Parses an integer or float attribute with an optional `: type`.
    fn parse_number_attr(&mut self) -> PResult<Attribute> {
        let start = self.tok.start;
        let negative_float = self.at(TokKind::Minus) && self.peek_kind()? == TokKind::Float;
        if self.at(TokKind::Float) || negative_float {
            let negative = self.eat(TokKind::Minus)?;
            let tok = self.expect(TokKind::Float, "a float")?;
            let text = self.text(tok);
            let value: f64 = text
                .parse()
                .map_err(|_| self.err_at(start, format!("invalid float {text}")))?;
            let value = if negative { -value } else { value };
            let ty = if self.eat(TokKind::Colon)? {
                self.parse_scalar_type_for_attr()?
            } else {
                Some(ElementType::F64)
            };
            return match ty {
                Some(ty) if ty.is_float() => Ok(Attribute::Float { value, ty }),
                _ => Err(self.err_at(start, "a float literal needs a float type")),
            };
        }
        let (negative, magnitude, hex) = self.parse_int_parts()?;
        let value = if negative {
            -(magnitude as i128)
        } else {
            magnitude as i128
        };
        let ty = if self.eat(TokKind::Colon)? {
            self.parse_scalar_type_for_attr()?
        } else {
            Some(ElementType::S64)
        };
        match ty {
            Some(ty) if ty.is_float() => {
                let value = if hex {
                    decode_float_bits(magnitude as u64, ty).ok_or_else(|| {
                        self.err_at(start, format!("cannot decode a {ty} bit pattern"))
                    })?
                } else {
                    value as f64
                };
                Ok(Attribute::Float { value, ty })
            }
            Some(ElementType::Pred) if (0..=1).contains(&value) => Ok(Attribute::Bool(value == 1)),
            ty => Ok(Attribute::Integer { value, ty }),
        }
    }

    /// Parses the type after `:` of a scalar attribute: `None` for `index`.
    fn parse_scalar_type_for_attr(&mut self) -> PResult<Option<ElementType>> {
        if self.eat_bare("index")? {
            return Ok(None);
        }
        self.parse_element_type().map(Some)
    }

    /// Parses `array<i64: 1, 2>` / `array<i1: true>`.
    fn parse_dense_array(&mut self) -> PResult<Attribute> {
        let start = self.tok.start;
        self.expect_bare("array")?;
        self.expect(TokKind::Less, "'<' after 'array'")?;
        let et = self.parse_element_type()?;
        let mut ints = Vec::new();
        let mut bools = Vec::new();
        if self.eat(TokKind::Colon)? {
            loop {
                match et {
                    ElementType::Pred => bools.push(self.parse_bool()?),
                    ElementType::S64 => ints.push(self.parse_i64()?),
                    _ if et.is_int() => ints.push(self.parse_i64()?),
                    _ => {
                        // Float arrays are kept as text.
                        self.eat(TokKind::Minus)?;
                        if !(self.eat(TokKind::Float)? || self.eat(TokKind::Integer)?) {
                            return Err(self.expected("a number"));
                        }
                    }
                }
                if !self.eat(TokKind::Comma)? {
                    break;
                }
            }
        }
        self.expect(TokKind::Greater, "'>' closing array<...>")?;
        match et {
            ElementType::Pred => Ok(Attribute::DenseBoolArray(bools)),
            ElementType::S64 => Ok(Attribute::DenseI64Array(ints)),
            _ => Ok(Attribute::Opaque(
                self.lex.src()[start..self.prev_end()].to_string(),
            )),
        }
    }

    /// Parses `#...` attributes: aliases, StableHLO enums and structs, other dialects'.
    fn parse_hash_attr(&mut self) -> PResult<Attribute> {
        let start = self.tok.start;
        let name = self.cur();
        if let Some(&pos) = self.attr_aliases.get(name) {
            let name = name.to_string();
            self.bump()?;
            return self.with_alias(&name, pos, |p| p.parse_attribute());
        }
        self.bump()?;
        if name == "#stablehlo" && self.at(TokKind::Less) {
            let after_less = self.lex.clone();
            self.bump()?;
            if self.at(TokKind::Bare) {
                let kw = self.cur();
                if let Some(attr) = self.parse_stablehlo_enum(kw)? {
                    self.expect(TokKind::Greater, "'>' closing the enum attribute")?;
                    return Ok(attr);
                }
            }
            // Not an enum oxla knows: keep as text.
            self.lex = after_less;
            self.tok = Token {
                kind: TokKind::Less,
                start: self.lex.pos() - 1,
                end: self.lex.pos(),
            };
        }
        if self.at(TokKind::Less) && self.tok.start == start + name.len() {
            self.skip_balanced_angle()?;
        }
        Ok(Attribute::Opaque(
            self.lex.src()[start..self.prev_end()].to_string(),
        ))
    }

    /// Parses the `KIND VALUE` of `#stablehlo<KIND VALUE>` if it is an enum oxla models.
    fn parse_stablehlo_enum(&mut self, kind: &str) -> PResult<Option<Attribute>> {
        let known = matches!(
            kind,
            "comparison_direction"
                | "comparison_type"
                | "precision"
                | "fft_type"
                | "rng_algorithm"
                | "rng_distribution"
                | "transpose"
        );
        if !known {
            return Ok(None);
        }
        self.bump()?;
        let value_tok = self.expect(TokKind::Bare, "an enum value")?;
        let value = self.text(value_tok);
        let attr = parse_enum_value(kind, value)
            .ok_or_else(|| self.err_at(value_tok.start, format!("unknown {kind} value {value}")))?;
        Ok(Some(attr))
    }

    /// Parses `{name = value, ...}`, flattening structured StableHLO attributes.
    pub(super) fn parse_attr_dict(&mut self) -> PResult<Vec<NamedAttribute>> {
        self.enter()?;
        let res = self.parse_attr_dict_inner();
        self.leave();
        res
    }

    fn parse_attr_dict_inner(&mut self) -> PResult<Vec<NamedAttribute>> {
        self.expect(TokKind::LBrace, "'{'")?;
        let mut out = Vec::new();
        if self.eat(TokKind::RBrace)? {
            return Ok(out);
        }
        loop {
            let name = match self.tok.kind {
                TokKind::Bare => self.bump().map(|t| self.text(t).to_string())?,
                TokKind::String => self.parse_string()?,
                _ => return Err(self.expected("an attribute name")),
            };
            if self.eat(TokKind::Equal)? {
                self.parse_named_value(&name, &mut out)?;
            } else {
                out.push((name, Attribute::Unit));
            }
            if self.eat(TokKind::RBrace)? {
                return Ok(out);
            }
            self.expect(TokKind::Comma, "',' or '}' in an attribute dictionary")?;
        }
    }

    /// Parses the value of attribute `name` into `out`, flattening StableHLO structs.
    pub(super) fn parse_named_value(
        &mut self,
        name: &str,
        out: &mut Vec<NamedAttribute>,
    ) -> PResult<()> {
        if self.at(TokKind::Hash) {
            let text = self.cur();
            if let Some(&pos) = self.attr_aliases.get(text) {
                let alias = text.to_string();
                self.bump()?;
                return self.with_alias(&alias, pos, |p| p.parse_named_value(name, out));
            }
            let kind = match text {
                "#stablehlo.gather" => Some(StructKind::Gather),
                "#stablehlo.scatter" => Some(StructKind::Scatter),
                "#stablehlo.dot" => Some(StructKind::Dot),
                "#stablehlo.conv" => Some(StructKind::Conv),
                "#stablehlo.channel_handle" => Some(StructKind::Channel),
                _ => None,
            };
            if let Some(kind) = kind {
                self.bump()?;
                self.expect(TokKind::Less, "'<'")?;
                if kind == StructKind::Conv && !self.at_bare("raw") {
                    self.parse_conv_dims(out)?;
                } else {
                    self.eat_bare("raw")?;
                    let fields = self.parse_struct_fields()?;
                    flatten_struct(kind, fields, out).map_err(|e| self.err(e))?;
                }
                self.expect(TokKind::Greater, "'>' closing the attribute")?;
                return Ok(());
            }
        }
        let value = self.parse_attribute()?;
        out.push((name.to_string(), value));
        Ok(())
    }

    /// Parses `name = value, ...` up to (not including) a closing `>`.
    fn parse_struct_fields(&mut self) -> PResult<Vec<NamedAttribute>> {
        let mut fields = Vec::new();
        while self.at(TokKind::Bare) {
            let name = self.bump().map(|t| self.text(t).to_string())?;
            self.expect(TokKind::Equal, "'='")?;
            let value = if self.at(TokKind::LSquare) {
                Attribute::DenseI64Array(self.parse_i64_list()?)
            } else {
                self.parse_attribute()?
            };
            fields.push((name, value));
            if !self.eat(TokKind::Comma)? {
                break;
            }
        }
        Ok(fields)
    }

    /// Parses `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` into the flattened convolution fields.
    pub(super) fn parse_conv_dims(&mut self, out: &mut Vec<NamedAttribute>) -> PResult<()> {
        let input = self.parse_conv_dim_list("b", "f")?;
        self.expect_bare("x")?;
        let kernel = self.parse_conv_dim_list("i", "o")?;
        self.expect(TokKind::Arrow, "'->'")?;
        let output = self.parse_conv_dim_list("b", "f")?;
        let int = |v: i64| Attribute::Integer {
            value: i128::from(v),
            ty: Some(ElementType::S64),
        };
        out.push(("input_batch_dimension".into(), int(input.0)));
        out.push(("input_feature_dimension".into(), int(input.1)));
        out.push((
            "input_spatial_dimensions".into(),
            Attribute::DenseI64Array(input.2),
        ));
        out.push(("kernel_input_feature_dimension".into(), int(kernel.0)));
        out.push(("kernel_output_feature_dimension".into(), int(kernel.1)));
        out.push((
            "kernel_spatial_dimensions".into(),
            Attribute::DenseI64Array(kernel.2),
        ));
        out.push(("output_batch_dimension".into(), int(output.0)));
        out.push(("output_feature_dimension".into(), int(output.1)));
        out.push((
            "output_spatial_dimensions".into(),
            Attribute::DenseI64Array(output.2),
        ));
        Ok(())
    }

    /// Parses one `[...]` of convolution dimension labels; returns the positions of the two
    /// non-spatial labels and of each spatial dimension.
    fn parse_conv_dim_list(&mut self, first: &str, second: &str) -> PResult<(i64, i64, Vec<i64>)> {
        let open = self.expect(TokKind::LSquare, "'['")?;
        let mut first_pos = None;
        let mut second_pos = None;
        let mut spatial: Vec<Option<i64>> = Vec::new();
        let mut position: i64 = 0;
        if !self.eat(TokKind::RSquare)? {
            loop {
                if self.at(TokKind::Integer) {
                    let tok = self.tok;
                    let index = self.parse_i64()?;
                    let slot =
                        usize::try_from(index)
                            .ok()
                            .filter(|&i| i < 64)
                            .ok_or_else(|| {
                                self.err_at(tok.start, "spatial dimension index out of range")
                            })?;
                    if spatial.len() <= slot {
                        spatial.resize(slot + 1, None);
                    }
                    if spatial[slot].replace(position).is_some() {
                        return Err(self.err_at(
                            tok.start,
                            format!("spatial dimension {index} appears twice"),
                        ));
                    }
                } else if self.at_bare(first) && first_pos.is_none() {
                    first_pos = Some(position);
                    self.bump()?;
                } else if self.at_bare(second) && second_pos.is_none() {
                    second_pos = Some(position);
                    self.bump()?;
                } else {
                    return Err(self.expected(&format!(
                        "'{first}', '{second}' or a spatial dimension index"
                    )));
                }
                position += 1;
                if self.eat(TokKind::RSquare)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ']'")?;
            }
        }
        let (Some(a), Some(b)) = (first_pos, second_pos) else {
            return Err(self.err_at(
                open.start,
                format!("dimension list needs both '{first}' and '{second}'"),
            ));
        };
        let spatial = spatial
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                p.ok_or_else(|| {
                    self.err_at(open.start, format!("spatial dimension {i} is missing"))
                })
            })
            .collect::<PResult<Vec<i64>>>()?;
        Ok((a, b, spatial))
    }

    // ----- dense literals -----

    /// Parses `dense<...> : type`; returns the attribute and the type.
    pub(super) fn parse_dense_attr(&mut self) -> PResult<(Attribute, Type)> {
        let start = self.tok.start;
        self.expect_bare("dense")?;
        self.expect(TokKind::Less, "'<' after 'dense'")?;
        let literal = if self.at(TokKind::Greater) {
            DenseLiteral::List {
                shape: vec![0],
                elements: Vec::new(),
            }
        } else if self.at(TokKind::String) {
            let tok = self.tok;
            let text = self.parse_string()?;
            let hex = text
                .strip_prefix("0x")
                .ok_or_else(|| self.err_at(tok.start, "expected a \"0x...\" hex string"))?;
            DenseLiteral::Hex(
                decode_hex(hex).ok_or_else(|| self.err_at(tok.start, "invalid hex data"))?,
            )
        } else if self.at(TokKind::LSquare) {
            let mut elements = Vec::new();
            let shape = self.parse_dense_list(&mut elements)?;
            DenseLiteral::List { shape, elements }
        } else {
            DenseLiteral::Splat(self.parse_dense_scalar()?)
        };
        self.expect(TokKind::Greater, "'>' closing dense<...>")?;
        self.expect(TokKind::Colon, "':' and the type of the dense attribute")?;
        let ty = self.parse_type()?;
        match &ty {
            Type::Tensor(tensor) => {
                let attr = dense::encode(&literal, tensor).map_err(|e| self.err_at(start, e))?;
                Ok((Attribute::Elements(attr), ty))
            }
            _ => Ok((
                Attribute::Opaque(self.lex.src()[start..self.prev_end()].to_string()),
                ty,
            )),
        }
    }

    /// Parses a nested `[...]` list, appending scalars; returns the shape it implies.
    fn parse_dense_list(&mut self, out: &mut Vec<Scalar>) -> PResult<Vec<i64>> {
        self.enter()?;
        let res = self.parse_dense_list_inner(out);
        self.leave();
        res
    }

    fn parse_dense_list_inner(&mut self, out: &mut Vec<Scalar>) -> PResult<Vec<i64>> {
        let open = self.expect(TokKind::LSquare, "'['")?;
        let mut count: i64 = 0;
        let mut inner: Option<Vec<i64>> = None;
        if !self.eat(TokKind::RSquare)? {
            loop {
                let sub = if self.at(TokKind::LSquare) {
                    self.parse_dense_list(out)?
                } else {
                    out.push(self.parse_dense_scalar()?);
                    Vec::new()
                };
                match &inner {
                    None => inner = Some(sub),
                    Some(prev) if *prev != sub => {
                        return Err(
                            self.err_at(open.start, "dense literal lists have different shapes")
                        )
                    }
                    Some(_) => {}
                }
                count += 1;
                if self.eat(TokKind::RSquare)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ']' in a dense literal")?;
            }
        }
        let mut shape = vec![count];
        shape.extend(inner.unwrap_or_default());
        Ok(shape)
    }

    /// Parses one scalar of a dense literal.
    fn parse_dense_scalar(&mut self) -> PResult<Scalar> {
        match self.tok.kind {
            TokKind::LParen => {
                self.bump()?;
                let re = self.parse_dense_scalar()?;
                self.expect(TokKind::Comma, "',' in a complex literal")?;
                let im = self.parse_dense_scalar()?;
                self.expect(TokKind::RParen, "')' closing a complex literal")?;
                Ok(Scalar::Complex(Box::new(re), Box::new(im)))
            }
            TokKind::Bare if self.at_bare("true") || self.at_bare("false") => {
                Ok(Scalar::Bool(self.parse_bool()?))
            }
            TokKind::Minus | TokKind::Integer | TokKind::Float => {
                let negative = self.at(TokKind::Minus);
                if negative && self.peek_kind()? == TokKind::Float || self.at(TokKind::Float) {
                    self.eat(TokKind::Minus)?;
                    let tok = self.expect(TokKind::Float, "a float")?;
                    let text = self.text(tok);
                    return Ok(Scalar::Float(if negative {
                        format!("-{text}")
                    } else {
                        text.to_string()
                    }));
                }
                let (negative, magnitude, hex) = self.parse_int_parts()?;
                Ok(Scalar::Int {
                    negative,
                    magnitude,
                    hex,
                })
            }
            TokKind::Bare if matches!(self.cur(), "inf" | "nan") => {
                let text = self.bump().map(|t| self.text(t).to_string())?;
                Ok(Scalar::Float(text))
            }
            _ => Err(self.expected("a literal value")),
        }
    }

    /// Parses `dense_resource<name> : type` using the file's resource blobs.
    pub(super) fn parse_dense_resource_attr(&mut self) -> PResult<(Attribute, Type)> {
        let start = self.tok.start;
        self.expect_bare("dense_resource")?;
        self.expect(TokKind::Less, "'<' after 'dense_resource'")?;
        let name_tok = self.tok;
        let name = match self.tok.kind {
            TokKind::Bare => self.bump().map(|t| self.text(t).to_string())?,
            TokKind::String => self.parse_string()?,
            _ => return Err(self.expected("a resource name")),
        };
        self.expect(TokKind::Greater, "'>' closing dense_resource<...>")?;
        self.expect(TokKind::Colon, "':' and the type")?;
        let ty = self.parse_type()?;
        let Type::Tensor(tensor) = &ty else {
            return Ok((
                Attribute::Opaque(self.lex.src()[start..self.prev_end()].to_string()),
                ty,
            ));
        };
        let blob = self.resources.get(&name).ok_or_else(|| {
            self.err_at(
                name_tok.start,
                format!("resource '{name}' has no data in the file's dialect_resources"),
            )
        })?;
        let attr = dense::encode(&DenseLiteral::Hex(blob.clone()), tensor)
            .map_err(|e| self.err_at(start, e))?;
        Ok((Attribute::Elements(attr), ty))
    }

    // ----- locations -----

    /// Parses an optional trailing `loc(...)`.
    pub(super) fn parse_opt_loc(&mut self) -> PResult<Option<Location>> {
        if !self.at_bare("loc") {
            return Ok(None);
        }
        self.bump()?;
        self.expect(TokKind::LParen, "'(' after 'loc'")?;
        let loc = self.parse_location_inner()?;
        self.expect(TokKind::RParen, "')' closing loc(...)")?;
        Ok(Some(loc))
    }

    fn parse_location_inner(&mut self) -> PResult<Location> {
        self.enter()?;
        let res = self.parse_location_inner2();
        self.leave();
        res
    }

    fn parse_location_inner2(&mut self) -> PResult<Location> {
        match self.tok.kind {
            TokKind::Hash => {
                let name = self.cur().to_string();
                let pos = *self
                    .attr_aliases
                    .get(&name)
                    .ok_or_else(|| self.err(format!("undefined location alias {name}")))?;
                if self.resolving.contains(&name) {
                    return Err(self.err(format!("alias {name} refers to itself")));
                }
                self.bump()?;
                if let Some(loc) = self.loc_cache.get(&name) {
                    return Ok(loc.clone());
                }
                let loc = self.with_alias(&name, pos, |p| {
                    p.parse_opt_loc()?
                        .ok_or_else(|| p.expected("'loc(...)' as the alias value"))
                })?;
                self.loc_cache.insert(name, loc.clone());
                Ok(loc)
            }
            TokKind::String => {
                let name = self.parse_string()?;
                if self.eat(TokKind::Colon)? {
                    let line = self.parse_u32()?;
                    self.expect(TokKind::Colon, "':' before the column")?;
                    let col = self.parse_u32()?;
                    if self.eat_bare("to")? {
                        if self.at(TokKind::Integer) {
                            self.parse_u32()?;
                        }
                        self.expect(TokKind::Colon, "':' before the end column")?;
                        self.parse_u32()?;
                    }
                    Ok(Location::FileLineCol {
                        file: name.into(),
                        line,
                        col,
                    })
                } else if self.eat(TokKind::LParen)? {
                    let child = self.parse_location_inner()?;
                    self.expect(TokKind::RParen, "')'")?;
                    Ok(Location::Name {
                        name: name.into(),
                        child: Some(Arc::new(child)),
                    })
                } else {
                    Ok(Location::Name {
                        name: name.into(),
                        child: None,
                    })
                }
            }
            TokKind::Bare => match self.cur() {
                "unknown" => {
                    self.bump()?;
                    Ok(Location::Unknown)
                }
                "callsite" => {
                    self.bump()?;
                    self.expect(TokKind::LParen, "'('")?;
                    let callee = self.parse_location_inner()?;
                    self.expect_bare("at")?;
                    let caller = self.parse_location_inner()?;
                    self.expect(TokKind::RParen, "')'")?;
                    Ok(Location::CallSite {
                        callee: Arc::new(callee),
                        caller: Arc::new(caller),
                    })
                }
                "fused" => {
                    self.bump()?;
                    if self.eat(TokKind::Less)? {
                        self.parse_attribute()?;
                        self.expect(TokKind::Greater, "'>'")?;
                    }
                    self.expect(TokKind::LSquare, "'['")?;
                    let mut locs = Vec::new();
                    if !self.eat(TokKind::RSquare)? {
                        loop {
                            locs.push(self.parse_location_inner()?);
                            if self.eat(TokKind::RSquare)? {
                                break;
                            }
                            self.expect(TokKind::Comma, "',' or ']'")?;
                        }
                    }
                    Ok(Location::Fused(locs.into()))
                }
                _ => Err(self.expected("a location")),
            },
            _ => Err(self.expected("a location")),
        }
    }

    fn parse_u32(&mut self) -> PResult<u32> {
        let start = self.tok.start;
        let v = self.parse_i64()?;
        u32::try_from(v).map_err(|_| self.err_at(start, "number out of range"))
    }

    // ----- top level -----

    /// Collects alias definitions and resource blobs, which may follow their uses.
    fn prepass(&mut self) -> PResult<()> {
        let mut depth: usize = 0;
        let mut meta_starts = Vec::new();
        loop {
            let tok = self.tok;
            match tok.kind {
                TokKind::Eof => break,
                TokKind::LBrace => depth += 1,
                TokKind::RBrace => depth = depth.saturating_sub(1),
                TokKind::FileMetaStart if depth == 0 => meta_starts.push(tok.start),
                TokKind::Hash | TokKind::Bang if depth == 0 => {
                    self.bump()?;
                    if self.at(TokKind::Equal) {
                        let name = self.text(tok).to_string();
                        let map = if tok.kind == TokKind::Hash {
                            &mut self.attr_aliases
                        } else {
                            &mut self.type_aliases
                        };
                        if map.insert(name.clone(), self.tok.end).is_some() {
                            return Err(
                                self.err_at(tok.start, format!("redefinition of alias {name}"))
                            );
                        }
                    }
                    continue;
                }
                _ => {}
            }
            self.bump()?;
        }
        for start in meta_starts {
            self.seek(start)?;
            self.parse_file_metadata(true)?;
        }
        Ok(())
    }

    /// Parses `{-# key: {...}, ... #-}`; stores builtin resource blobs when `store`.
    fn parse_file_metadata(&mut self, store: bool) -> PResult<()> {
        self.expect(TokKind::FileMetaStart, "'{-#'")?;
        loop {
            if self.eat(TokKind::FileMetaEnd)? {
                return Ok(());
            }
            let section = self.expect(TokKind::Bare, "a metadata section name")?;
            self.expect(TokKind::Colon, "':'")?;
            let is_resources = self.text(section) == "dialect_resources";
            self.expect(TokKind::LBrace, "'{'")?;
            // `dialect: { name: "0x...", ... }, ...` (or `{ key: value }` in other sections).
            if !self.eat(TokKind::RBrace)? {
                loop {
                    let dialect_tok = self.expect(TokKind::Bare, "a dialect or key name")?;
                    self.expect(TokKind::Colon, "':'")?;
                    if self.eat(TokKind::LBrace)? {
                        let builtin = is_resources && self.text(dialect_tok) == "builtin";
                        if !self.eat(TokKind::RBrace)? {
                            loop {
                                let key = match self.tok.kind {
                                    TokKind::Bare => {
                                        self.bump().map(|t| self.text(t).to_string())?
                                    }
                                    TokKind::String => self.parse_string()?,
                                    _ => return Err(self.expected("a resource name")),
                                };
                                self.expect(TokKind::Colon, "':'")?;
                                let value_tok = self.tok;
                                let value = self.parse_attribute()?;
                                if builtin && store {
                                    let blob = value
                                        .as_str()
                                        .and_then(|s| s.strip_prefix("0x"))
                                        .and_then(decode_hex)
                                        .filter(|b| b.len() >= 4)
                                        .ok_or_else(|| {
                                            self.err_at(value_tok.start, "expected a \"0x...\" blob with a 4-byte alignment header")
                                        })?;
                                    self.resources.insert(key, blob[4..].to_vec());
                                }
                                if self.eat(TokKind::RBrace)? {
                                    break;
                                }
                                self.expect(TokKind::Comma, "',' or '}'")?;
                            }
                        }
                    } else {
                        self.parse_attribute()?;
                    }
                    if self.eat(TokKind::RBrace)? {
                        break;
                    }
                    self.expect(TokKind::Comma, "',' or '}'")?;
                }
            }
            self.eat(TokKind::Comma)?;
        }
    }

    /// Parses the whole file after the prepass.
    fn parse_top_level(&mut self) -> PResult<Module> {
        let mut module: Option<Module> = None;
        let mut implicit = Module::default();
        loop {
            match self.tok.kind {
                TokKind::Eof => break,
                TokKind::Hash | TokKind::Bang => {
                    let is_type = self.at(TokKind::Bang);
                    self.bump()?;
                    self.expect(TokKind::Equal, "'=' of an alias definition")?;
                    if is_type {
                        self.parse_type_or_fn()?;
                    } else if self.parse_opt_loc()?.is_none() {
                        self.parse_attribute()?;
                    }
                }
                TokKind::FileMetaStart => self.parse_file_metadata(false)?,
                TokKind::Bare if self.at_bare("module") || self.at_bare("builtin.module") => {
                    if module.is_some() || !implicit.functions.is_empty() {
                        return Err(self.err("only one module per file is supported"));
                    }
                    module = Some(self.parse_module()?);
                }
                TokKind::Bare if self.at_bare("func.func") => {
                    if module.is_some() {
                        return Err(self.err("functions after the module are not supported"));
                    }
                    let f = self.parse_func()?;
                    implicit.functions.push(f);
                }
                _ => return Err(self.expected("'module', 'func.func' or an alias definition")),
            }
        }
        let module = module.unwrap_or(implicit);
        check_unique_functions(&module).map_err(|d| self.err_at(0, d))?;
        Ok(module)
    }

    fn parse_module(&mut self) -> PResult<Module> {
        self.bump()?;
        let mut module = Module::default();
        if self.at(TokKind::At) {
            module.name = Some(self.parse_symbol()?);
        }
        if self.eat_bare("attributes")? {
            module.attributes = self.parse_attr_dict()?;
        }
        self.expect(TokKind::LBrace, "'{' opening the module body")?;
        loop {
            if self.eat(TokKind::RBrace)? {
                break;
            }
            if self.at_bare("func.func") {
                let f = self.parse_func()?;
                module.functions.push(f);
            } else if self.at_bare("sdy.mesh") {
                // `sdy.mesh @name = <...> {attrs}`: a device mesh that sharding annotations
                // name; kept verbatim (without its location) so printing stays valid.
                let start = self.tok.start;
                self.bump()?;
                self.parse_symbol()?;
                self.expect(TokKind::Equal, "'=' of an sdy.mesh")?;
                self.skip_balanced_angle()?;
                if self.at(TokKind::LBrace) {
                    self.parse_attr_dict()?;
                }
                let text = self.lex.src()[start..self.prev_end()].to_string();
                module.declarations.push(text);
                self.parse_opt_loc()?;
            } else if self.at(TokKind::Eof) {
                return Err(self.expected("'}' closing the module"));
            } else {
                let what = self.found();
                return Err(self.err(format!(
                    "unsupported module-level item {what}: only func.func is supported"
                )));
            }
        }
        module.location = self.parse_opt_loc()?.unwrap_or_default();
        Ok(module)
    }

    fn parse_func(&mut self) -> PResult<Function> {
        self.expect_bare("func.func")?;
        let mut f = Function::default();
        if self.eat_bare("public")? {
            f.visibility = Visibility::Public;
        } else if self.eat_bare("private")? {
            f.visibility = Visibility::Private;
        } else if self.eat_bare("nested")? {
            f.visibility = Visibility::Nested;
        }
        f.name = self.parse_symbol()?;
        self.func = f;
        self.scopes = vec![HashMap::new()];
        // Arguments: `%name: type {attrs} loc(...)` for definitions, `type {attrs}` for declarations.
        self.expect(TokKind::LParen, "'(' opening the argument list")?;
        let mut arg_values = Vec::new();
        let mut declaration_args = false;
        if !self.eat(TokKind::RParen)? {
            loop {
                let name_tok = if self.at(TokKind::Percent) {
                    Some(self.bump()?)
                } else {
                    declaration_args = true;
                    None
                };
                if name_tok.is_some() {
                    self.expect(TokKind::Colon, "':' after the argument name")?;
                }
                let ty = self.parse_type()?;
                let attrs = if self.at(TokKind::LBrace) {
                    self.parse_attr_dict()?
                } else {
                    Vec::new()
                };
                self.parse_opt_loc()?;
                self.func.ty.inputs.push(ty.clone());
                self.func.arg_attrs.push(attrs);
                if let Some(tok) = name_tok {
                    let value = self.func.new_value(ty);
                    self.define(tok, vec![value])?;
                    arg_values.push(value);
                }
                if self.eat(TokKind::RParen)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ')' in the argument list")?;
            }
        }
        if declaration_args && !arg_values.is_empty() {
            return Err(self.err("mixing named and unnamed function arguments"));
        }
        if self.eat(TokKind::Arrow)? {
            if self.eat(TokKind::LParen)? {
                if !self.eat(TokKind::RParen)? {
                    loop {
                        let ty = self.parse_type()?;
                        let attrs = if self.at(TokKind::LBrace) {
                            self.parse_attr_dict()?
                        } else {
                            Vec::new()
                        };
                        self.func.ty.results.push(ty);
                        self.func.res_attrs.push(attrs);
                        if self.eat(TokKind::RParen)? {
                            break;
                        }
                        self.expect(TokKind::Comma, "',' or ')' in the result list")?;
                    }
                }
            } else {
                let ty = self.parse_type()?;
                self.func.ty.results.push(ty);
                self.func.res_attrs.push(Vec::new());
            }
        }
        if self.eat_bare("attributes")? {
            self.func.attributes = self.parse_attr_dict()?;
        }
        if self.at(TokKind::LBrace) {
            if declaration_args {
                return Err(self.err("a function with a body needs named arguments"));
            }
            let mut body = self.parse_region_with_args(Some(arg_values), false)?;
            // JAX prints some functions (sort and top-k comparators) ending in
            // `stablehlo.return`, which MLIR accepts there; it ends the function as
            // `func.return` does, as in the bytecode reader.
            for block in &mut body.blocks {
                if let Some(last) = block.ops.last_mut() {
                    if last.kind == OpKind::Return {
                        last.kind = OpKind::FuncReturn;
                    }
                }
            }
            self.func.body = body;
        }
        self.func.location = self.parse_opt_loc()?.unwrap_or_default();
        if self.func.arg_attrs.iter().all(|a| a.is_empty()) {
            self.func.arg_attrs.clear();
        }
        if self.func.res_attrs.iter().all(|a| a.is_empty()) {
            self.func.res_attrs.clear();
        }
        self.scopes.clear();
        Ok(std::mem::take(&mut self.func))
    }

    // ----- values and regions -----

    /// Binds the name of token `tok` (a `%name`) to a group of values in the innermost scope.
    pub(super) fn define(&mut self, tok: Token, values: Vec<ValueId>) -> PResult<()> {
        let name = self.text(tok).to_string();
        let scope = self
            .scopes
            .last_mut()
            .ok_or_else(|| error_at(self.lex.src(), tok.start, "value outside a function"))?;
        if scope.insert(name.clone(), values).is_some() {
            return Err(self.err_at(tok.start, format!("redefinition of value {name}")));
        }
        Ok(())
    }

    /// Parses a value use `%name` or `%name#N`.
    pub(super) fn parse_value_use(&mut self) -> PResult<ValueId> {
        let tok = self.expect(TokKind::Percent, "a value '%...'")?;
        let name = self.text(tok);
        let mut index = 0usize;
        if self.at(TokKind::Hash) && self.tok.start == tok.end {
            let idx_text = &self.cur()[1..];
            index = idx_text.parse().map_err(|_| {
                self.err(format!(
                    "expected a result number after '#', found '{idx_text}'"
                ))
            })?;
            self.bump()?;
        }
        for scope in self.scopes.iter().rev() {
            if let Some(group) = scope.get(name) {
                return group.get(index).copied().ok_or_else(|| {
                    self.err_at(
                        tok.start,
                        format!(
                            "{name} has {} results, #{index} is out of range",
                            group.len()
                        ),
                    )
                });
            }
        }
        Err(self.err_at(tok.start, format!("use of undefined value {name}")))
    }

    /// Parses a comma-separated list of value uses (possibly empty).
    pub(super) fn parse_value_list(&mut self) -> PResult<Vec<ValueId>> {
        let mut out = Vec::new();
        if !self.at(TokKind::Percent) {
            return Ok(out);
        }
        loop {
            out.push(self.parse_value_use()?);
            if !(self.at(TokKind::Comma) && self.peek_kind()? == TokKind::Percent) {
                return Ok(out);
            }
            self.bump()?;
        }
    }

    /// Parses a region `{ ... }`. With `entry_args`, the entry block gets those arguments
    /// (already defined by the caller in a new scope if `scoped` is false).
    pub(super) fn parse_region_with_args(
        &mut self,
        entry_args: Option<Vec<ValueId>>,
        new_scope: bool,
    ) -> PResult<Region> {
        self.enter()?;
        if new_scope {
            self.scopes.push(HashMap::new());
        }
        let res = self.parse_region_inner(entry_args);
        if new_scope {
            self.scopes.pop();
        }
        self.leave();
        res
    }

    /// Parses a region whose entry block arguments are `(name token, type)` pairs.
    pub(super) fn parse_region_named_args(&mut self, args: &[(Token, Type)]) -> PResult<Region> {
        self.scopes.push(HashMap::new());
        let mut values = Vec::new();
        let res = (|| {
            for (tok, ty) in args {
                let v = self.func.new_value(ty.clone());
                self.define(*tok, vec![v])?;
                values.push(v);
            }
            self.parse_region_with_args(Some(values), false)
        })();
        self.scopes.pop();
        res
    }

    fn parse_region_inner(&mut self, entry_args: Option<Vec<ValueId>>) -> PResult<Region> {
        self.expect(TokKind::LBrace, "'{' opening a region")?;
        let mut region = Region::default();
        let mut labels: HashSet<String> = HashSet::new();
        let mut current: Option<Block> = entry_args.map(|arguments| Block {
            arguments,
            ops: Vec::new(),
        });
        loop {
            if self.at(TokKind::RBrace) {
                self.bump()?;
                region.blocks.extend(current);
                return Ok(region);
            }
            if self.at(TokKind::Caret) {
                let label = self.bump()?;
                if !labels.insert(self.text(label).to_string()) {
                    return Err(self.err_at(label.start, "redefinition of block label"));
                }
                if let Some(block) = current.take() {
                    let is_entry_placeholder = region.blocks.is_empty() && block.ops.is_empty();
                    if is_entry_placeholder && !block.arguments.is_empty() {
                        return Err(self.err_at(
                            label.start,
                            "the entry block's arguments are already given by the op",
                        ));
                    }
                    if !is_entry_placeholder {
                        region.blocks.push(block);
                    }
                }
                let mut block = Block::default();
                if self.eat(TokKind::LParen)? && !self.eat(TokKind::RParen)? {
                    loop {
                        let name = self.expect(TokKind::Percent, "a block argument '%...'")?;
                        self.expect(TokKind::Colon, "':' after the block argument")?;
                        let ty = self.parse_type()?;
                        self.parse_opt_loc()?;
                        let v = self.func.new_value(ty);
                        self.define(name, vec![v])?;
                        block.arguments.push(v);
                        if self.eat(TokKind::RParen)? {
                            break;
                        }
                        self.expect(TokKind::Comma, "',' or ')'")?;
                    }
                }
                self.expect(TokKind::Colon, "':' after the block label")?;
                current = Some(block);
                continue;
            }
            if self.at(TokKind::Eof) {
                return Err(self.expected("'}' closing a region"));
            }
            let op_start = self.tok.start;
            let block = current.get_or_insert_with(Block::default);
            if block
                .ops
                .last()
                .is_some_and(|last| last.kind.is_terminator())
            {
                return Err(self.err_at(op_start, "an op follows the block's terminator"));
            }
            let op = self.parse_op()?;
            block.ops.push(op);
        }
    }

    /// Parses `( region, region, ... )` of the generic syntax.
    pub(super) fn parse_generic_regions(&mut self) -> PResult<Vec<Region>> {
        self.expect(TokKind::LParen, "'('")?;
        let mut regions = Vec::new();
        if self.eat(TokKind::RParen)? {
            return Ok(regions);
        }
        loop {
            regions.push(self.parse_region_with_args(None, true)?);
            if self.eat(TokKind::RParen)? {
                return Ok(regions);
            }
            self.expect(TokKind::Comma, "',' or ')' between regions")?;
        }
    }

    // ----- ops -----

    /// Parses one op with its results and location.
    pub(super) fn parse_op(&mut self) -> PResult<Op> {
        let op_start = self.tok.start;
        let mut result_groups: Vec<(Token, usize)> = Vec::new();
        if self.at(TokKind::Percent) {
            loop {
                let name = self.expect(TokKind::Percent, "a result name")?;
                let mut count = 1usize;
                if self.eat(TokKind::Colon)? {
                    let n_tok = self.tok;
                    let n = self.parse_i64()?;
                    count = usize::try_from(n)
                        .ok()
                        .filter(|n| (1..=1 << 20).contains(n))
                        .ok_or_else(|| self.err_at(n_tok.start, "invalid result count"))?;
                }
                result_groups.push((name, count));
                if !self.eat(TokKind::Comma)? {
                    break;
                }
            }
            self.expect(TokKind::Equal, "'=' after the result names")?;
        }
        let parsed = match self.tok.kind {
            TokKind::String => self.parse_generic_op()?,
            TokKind::Bare => self.parse_custom_op()?,
            _ => return Err(self.expected("an op")),
        };
        let location = self.parse_opt_loc()?.unwrap_or_default();
        let declared: usize = result_groups.iter().map(|g| g.1).sum();
        if !result_groups.is_empty() && declared != parsed.result_types.len() {
            return Err(self.err_at(
                op_start,
                format!(
                    "{} declares {declared} results but its type has {}",
                    parsed.kind.name(),
                    parsed.result_types.len()
                ),
            ));
        }
        let results: Vec<ValueId> = parsed
            .result_types
            .into_iter()
            .map(|t| self.func.new_value(t))
            .collect();
        let mut next = 0;
        for (tok, count) in result_groups {
            self.define(tok, results[next..next + count].to_vec())?;
            next += count;
        }
        Ok(Op {
            kind: parsed.kind,
            operands: parsed.operands,
            results,
            attributes: parsed.attributes,
            regions: parsed.regions,
            location,
        })
    }

    /// Parses `"dialect.op"(operands) <{props}> (regions) {attrs} : (types) -> types`.
    fn parse_generic_op(&mut self) -> PResult<ParsedOp> {
        let name = self.parse_string()?;
        let kind = OpKind::from_name(&name);
        self.expect(TokKind::LParen, "'(' opening the operand list")?;
        let operands = self.parse_value_list()?;
        self.expect(TokKind::RParen, "')' closing the operand list")?;
        if self.at(TokKind::LSquare) {
            return Err(self.err("ops with block successors are not supported"));
        }
        let mut attributes = Vec::new();
        if self.at(TokKind::Less) {
            self.bump()?;
            attributes.extend(self.parse_attr_dict()?);
            self.expect(TokKind::Greater, "'>' closing the properties")?;
        }
        let regions = if self.at(TokKind::LParen) {
            self.parse_generic_regions()?
        } else {
            Vec::new()
        };
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        self.expect(TokKind::Colon, "':' and the op's function type")?;
        let sig_start = self.tok.start;
        let TypeOrFn::Function(fn_ty) = self.parse_type_or_fn()? else {
            return Err(self.err_at(sig_start, "expected a function type '(...) -> ...'"));
        };
        if fn_ty.inputs.len() != operands.len() {
            return Err(self.err_at(
                sig_start,
                format!(
                    "{} operands present, but the type lists {}",
                    operands.len(),
                    fn_ty.inputs.len()
                ),
            ));
        }
        Ok(ParsedOp {
            kind,
            operands,
            attributes,
            regions,
            result_types: fn_ty.results,
        })
    }
}

/// An op as parsed, before its results get values.
pub(super) struct ParsedOp {
    pub kind: OpKind,
    pub operands: Vec<ValueId>,
    pub attributes: Vec<NamedAttribute>,
    pub regions: Vec<Region>,
    pub result_types: Vec<Type>,
}

/// The structured StableHLO attributes the parser flattens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StructKind {
    Gather,
    Scatter,
    Dot,
    Conv,
    Channel,
}

/// Flattens the fields of a structured attribute into `out`, filling absent lists with `[]`.
fn flatten_struct(
    kind: StructKind,
    fields: Vec<NamedAttribute>,
    out: &mut Vec<NamedAttribute>,
) -> Result<(), String> {
    let (lists, ints): (&[&str], &[&str]) = match kind {
        StructKind::Gather => (
            &[
                "offset_dims",
                "collapsed_slice_dims",
                "operand_batching_dims",
                "start_indices_batching_dims",
                "start_index_map",
            ],
            &["index_vector_dim"],
        ),
        StructKind::Scatter => (
            &[
                "update_window_dims",
                "inserted_window_dims",
                "input_batching_dims",
                "scatter_indices_batching_dims",
                "scatter_dims_to_operand_dims",
            ],
            &["index_vector_dim"],
        ),
        StructKind::Dot => (
            &[
                "lhs_batching_dimensions",
                "rhs_batching_dimensions",
                "lhs_contracting_dimensions",
                "rhs_contracting_dimensions",
            ],
            &[],
        ),
        StructKind::Conv => (
            &[
                "input_spatial_dimensions",
                "kernel_spatial_dimensions",
                "output_spatial_dimensions",
            ],
            &[
                "input_batch_dimension",
                "input_feature_dimension",
                "kernel_input_feature_dimension",
                "kernel_output_feature_dimension",
                "output_batch_dimension",
                "output_feature_dimension",
            ],
        ),
        StructKind::Channel => (&[], &["handle", "type"]),
    };
    for (name, _) in &fields {
        if !lists.contains(&name.as_str()) && !ints.contains(&name.as_str()) {
            return Err(format!("unknown field '{name}' in a structured attribute"));
        }
    }
    for &list in lists {
        let value = match fields.iter().find(|(n, _)| n == list) {
            Some((_, a)) => a
                .as_i64_list()
                .ok_or_else(|| format!("field '{list}' must be a list of integers"))?,
            None => Vec::new(),
        };
        out.push((list.to_string(), Attribute::DenseI64Array(value)));
    }
    for &int in ints {
        let value = match fields.iter().find(|(n, _)| n == int) {
            Some((_, a)) => a
                .as_int()
                .ok_or_else(|| format!("field '{int}' must be an integer"))?,
            None => 0,
        };
        let name = match (kind, int) {
            (StructKind::Channel, "handle") => "channel_id",
            (StructKind::Channel, _) => "channel_type",
            _ => int,
        };
        out.push((
            name.to_string(),
            Attribute::Integer {
                value,
                ty: Some(ElementType::S64),
            },
        ));
    }
    Ok(())
}

/// The attribute for `#stablehlo<KIND VALUE>`.
pub(super) fn parse_enum_value(kind: &str, value: &str) -> Option<Attribute> {
    Some(match kind {
        "comparison_direction" => Attribute::ComparisonDirection(match value {
            "EQ" => ComparisonDirection::Eq,
            "NE" => ComparisonDirection::Ne,
            "GE" => ComparisonDirection::Ge,
            "GT" => ComparisonDirection::Gt,
            "LE" => ComparisonDirection::Le,
            "LT" => ComparisonDirection::Lt,
            _ => return None,
        }),
        "comparison_type" => Attribute::ComparisonType(match value {
            "NOTYPE" => ComparisonType::NotType,
            "FLOAT" => ComparisonType::Float,
            "TOTALORDER" => ComparisonType::TotalOrder,
            "SIGNED" => ComparisonType::Signed,
            "UNSIGNED" => ComparisonType::Unsigned,
            _ => return None,
        }),
        "precision" => Attribute::Precision(match value {
            "DEFAULT" => Precision::Default,
            "HIGH" => Precision::High,
            "HIGHEST" => Precision::Highest,
            _ => return None,
        }),
        "fft_type" => Attribute::FftType(match value {
            "FFT" => FftType::Fft,
            "IFFT" => FftType::Ifft,
            "RFFT" => FftType::Rfft,
            "IRFFT" => FftType::Irfft,
            _ => return None,
        }),
        "rng_algorithm" => Attribute::RngAlgorithm(match value {
            "DEFAULT" => RngAlgorithm::Default,
            "THREE_FRY" => RngAlgorithm::ThreeFry,
            "PHILOX" => RngAlgorithm::Philox,
            _ => return None,
        }),
        "rng_distribution" => Attribute::RngDistribution(match value {
            "UNIFORM" => RngDistribution::Uniform,
            "NORMAL" => RngDistribution::Normal,
            _ => return None,
        }),
        "transpose" => Attribute::Transpose(match value {
            "NO_TRANSPOSE" => Transpose::NoTranspose,
            "TRANSPOSE" => Transpose::Transpose,
            "ADJOINT" => Transpose::Adjoint,
            _ => return None,
        }),
        _ => return None,
    })
}

/// Decodes a hex digit string into bytes.
pub(super) fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

/// Decodes the bit pattern of a float attribute (`0x7FC00000 : f32`) into an `f64`.
fn decode_float_bits(bits: u64, ty: ElementType) -> Option<f64> {
    match ty {
        ElementType::F64 => Some(f64::from_bits(bits)),
        ElementType::F32 => Some(f64::from(f32::from_bits(u32::try_from(bits).ok()?))),
        ElementType::F16 => Some(decode_f16(u16::try_from(bits).ok()?)),
        ElementType::BF16 => Some(f64::from(f32::from_bits(
            u32::from(u16::try_from(bits).ok()?) << 16,
        ))),
        _ => None,
    }
}

/// Fails when two functions share a name.
fn check_unique_functions(module: &Module) -> Result<(), String> {
    let mut seen = HashSet::new();
    for f in &module.functions {
        if !seen.insert(f.name.as_str()) {
            return Err(format!("redefinition of function @{}", f.name));
        }
    }
    Ok(())
}

/// Decodes IEEE half-precision bits.
fn decode_f16(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + mantissa) * 2f64.powi(exponent - 25),
    }
}
