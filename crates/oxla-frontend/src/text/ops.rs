//! The pretty (custom) syntax of StableHLO, CHLO and `func` ops, as MLIR prints it.
//!
//! Most ops share one shape: operands and `keyword = value` items separated by commas, an
//! optional attribute dictionary, then `:` and a type signature. The handful of ops with
//! their own grammar (constant, while, reduce, convolution, custom_call, call, composite)
//! have their own functions here.

use super::lexer::{TokKind, Token};
use super::parser::{parse_enum_value, PResult, ParsedOp, Parser, TypeOrFn};
use bytes::Bytes;
use oxla_ir::{
    Attribute, Block, ElementType, ElementsAttr, NamedAttribute, Op, OpKind, Region, TensorType,
    Type,
};

fn i64_attr(value: i64) -> Attribute {
    Attribute::Integer {
        value: i128::from(value),
        ty: Some(ElementType::S64),
    }
}

impl Parser<'_> {
    /// Parses an op written in pretty syntax; the current token is its name.
    pub(super) fn parse_custom_op(&mut self) -> PResult<ParsedOp> {
        let name_tok = self.bump()?;
        let raw = self.text(name_tok);
        let full = match raw {
            "return" => "func.return",
            "call" => "func.call",
            other => other,
        };
        if !full.contains('.') {
            return Err(self.err_at(name_tok.start, format!("unknown op '{raw}'")));
        }
        let kind = OpKind::from_name(full);
        match &kind {
            OpKind::Constant => self.parse_constant(kind),
            OpKind::Other(name) if name == "chlo.constant" => self.parse_constant(kind),
            OpKind::While => self.parse_while(),
            OpKind::Reduce => self.parse_reduce(),
            OpKind::Convolution => self.parse_convolution(),
            OpKind::CustomCall => self.parse_call_like(kind, "call_target_name"),
            OpKind::Call => self.parse_call_like(kind, "callee"),
            OpKind::Composite => self.parse_composite(),
            _ => self.parse_pretty_common(kind),
        }
    }

    /// Parses `: signature` (if present) and returns the result types.
    fn parse_signature(&mut self, kind: &OpKind, n_operands: usize) -> PResult<Vec<Type>> {
        if !self.eat(TokKind::Colon)? {
            return Ok(Vec::new());
        }
        let sig_start = self.tok.start;
        match self.parse_type_or_fn()? {
            TypeOrFn::Function(f) => {
                if f.inputs.len() != n_operands {
                    return Err(self.err_at(
                        sig_start,
                        format!(
                            "{n_operands} operands present, but the type lists {}",
                            f.inputs.len()
                        ),
                    ));
                }
                Ok(f.results)
            }
            TypeOrFn::Type(first) => {
                let mut types = vec![first];
                while self.eat(TokKind::Comma)? {
                    types.push(self.parse_type()?);
                }
                if self.eat(TokKind::Arrow)? {
                    return self.parse_result_types();
                }
                match kind {
                    OpKind::Return | OpKind::FuncReturn | OpKind::SdyShardingGroup => {
                        Ok(Vec::new())
                    }
                    OpKind::OptimizationBarrier => Ok(types),
                    OpKind::Select if types.len() == 2 => {
                        Ok(vec![types.pop().unwrap_or(Type::Token)])
                    }
                    _ if types.len() == 1 => Ok(types),
                    _ => Err(self.err_at(
                        sig_start,
                        format!(
                            "expected a single type or a function type for {}",
                            kind.name()
                        ),
                    )),
                }
            }
        }
    }

    /// Operands, `keyword = value` items, attribute dictionary and signature.
    fn parse_pretty_common(&mut self, kind: OpKind) -> PResult<ParsedOp> {
        let mut operands = Vec::new();
        let mut attributes: Vec<NamedAttribute> = Vec::new();
        let paren = self.eat(TokKind::LParen)?;
        let mut n_bare = 0;
        loop {
            match self.tok.kind {
                TokKind::Percent => {
                    operands.push(self.parse_value_use()?);
                    if kind == OpKind::SdyShardingConstraint && self.at(TokKind::Less) {
                        // `<@mesh, [{...}]>`: the sharding, kept as the attribute it stands for.
                        let start = self.tok.start;
                        self.skip_balanced_angle()?;
                        let text = &self.lex.src()[start..self.prev_end()];
                        attributes.push((
                            "sharding".into(),
                            Attribute::Opaque(format!("#sdy.sharding{text}")),
                        ));
                    }
                    if self.at(TokKind::LSquare) {
                        match kind {
                            OpKind::Slice => self.parse_slice_ranges(&mut attributes)?,
                            OpKind::GetTupleElement => {
                                self.bump()?;
                                let index = self.parse_i64()?;
                                self.expect(TokKind::RSquare, "']'")?;
                                attributes.push((
                                    "index".into(),
                                    Attribute::Integer {
                                        value: i128::from(index),
                                        ty: Some(ElementType::S32),
                                    },
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                TokKind::Bare if self.peek_kind()? == TokKind::Equal => {
                    let kw = self.bump()?;
                    self.bump()?;
                    let kw = self.text(kw);
                    self.parse_keyword_value(&kind, kw, &mut attributes)?;
                }
                TokKind::Bare if kind == OpKind::Compare => {
                    let tok = self.bump()?;
                    let (name, enum_kind) = if n_bare == 0 {
                        ("comparison_direction", "comparison_direction")
                    } else {
                        ("compare_type", "comparison_type")
                    };
                    n_bare += 1;
                    let value = parse_enum_value(enum_kind, self.text(tok)).ok_or_else(|| {
                        self.err_at(
                            tok.start,
                            format!("unknown {enum_kind} '{}'", self.text(tok)),
                        )
                    })?;
                    attributes.push((name.into(), value));
                }
                _ => break,
            }
            if !self.eat(TokKind::Comma)? {
                // `sdy.sharding_group %v group_id=0`: the keyword follows without a comma.
                if kind == OpKind::SdyShardingGroup && self.at(TokKind::Bare) {
                    continue;
                }
                break;
            }
        }
        if paren {
            self.expect(TokKind::RParen, "')'")?;
        }
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        if kind == OpKind::DotGeneral {
            for name in ["lhs_batching_dimensions", "rhs_batching_dimensions"] {
                if !attributes.iter().any(|(n, _)| n == name) {
                    attributes.push((name.into(), Attribute::DenseI64Array(Vec::new())));
                }
            }
        }
        let result_types = self.parse_signature(&kind, operands.len())?;
        Ok(ParsedOp {
            kind,
            operands,
            attributes,
            regions: Vec::new(),
            result_types,
        })
    }

    /// Parses the value of `kw = ...` in a pretty op, pushing the attribute(s) it stands for.
    fn parse_keyword_value(
        &mut self,
        kind: &OpKind,
        kw: &str,
        out: &mut Vec<NamedAttribute>,
    ) -> PResult<()> {
        use OpKind::*;
        let list = |p: &mut Self, name: &str, out: &mut Vec<NamedAttribute>| -> PResult<()> {
            let v = p.parse_i64_list()?;
            out.push((name.to_string(), Attribute::DenseI64Array(v)));
            Ok(())
        };
        match (kind, kw) {
            (Transpose, "dims") => list(self, "permutation", out),
            (BroadcastInDim | DynamicBroadcastInDim, "dims") => {
                list(self, "broadcast_dimensions", out)
            }
            (_, "dims") => list(self, "dimensions", out),
            (Iota | DynamicIota, "dim") => {
                let v = self.parse_i64()?;
                out.push(("iota_dimension".into(), i64_attr(v)));
                Ok(())
            }
            (_, "dim") => {
                let v = self.parse_i64()?;
                out.push(("dimension".into(), i64_attr(v)));
                Ok(())
            }
            (Broadcast, "sizes") => list(self, "broadcast_sizes", out),
            (_, "sizes") => list(self, "slice_sizes", out),
            (_, "low") => list(self, "edge_padding_low", out),
            (_, "high") => list(self, "edge_padding_high", out),
            (_, "interior") => list(self, "interior_padding", out),
            (_, "length") => list(self, "fft_length", out),
            (_, "lower") | (_, "is_stable") => {
                let b = self.parse_bool()?;
                out.push((kw.to_string(), Attribute::Bool(b)));
                Ok(())
            }
            (SdyShardingGroup, "group_id") => {
                let v = self.parse_i64()?;
                out.push(("group_id".into(), i64_attr(v)));
                Ok(())
            }
            (_, "k") => {
                let v = self.parse_i64()?;
                out.push(("k".into(), i64_attr(v)));
                Ok(())
            }
            (_, "format") => {
                let tok = self.expect(TokKind::Bare, "an exponent/mantissa format 'e#m#'")?;
                let text = self.text(tok);
                let parsed = text.strip_prefix('e').and_then(|rest| {
                    let (e, m) = rest.split_once('m')?;
                    Some((e.parse::<i32>().ok()?, m.parse::<i32>().ok()?))
                });
                let (e, m) = parsed.ok_or_else(|| {
                    self.err_at(
                        tok.start,
                        format!("expected a format 'e#m#', found '{text}'"),
                    )
                })?;
                let i32_attr = |v: i32| Attribute::Integer {
                    value: i128::from(v),
                    ty: Some(ElementType::S32),
                };
                out.push(("exponent_bits".into(), i32_attr(e)));
                out.push(("mantissa_bits".into(), i32_attr(m)));
                Ok(())
            }
            (Fft, "type") => self.push_enum(out, "fft_type", "fft_type"),
            (RngBitGenerator, "algorithm") => self.push_enum(out, "rng_algorithm", "rng_algorithm"),
            (Rng, "distribution") => self.push_enum(out, "rng_distribution", "rng_distribution"),
            (_, "algorithm") => {
                let start = self.tok.start;
                self.skip_balanced_angle()?;
                let body = self.lex.src()[start..self.tok.start].trim_end();
                out.push((
                    "algorithm".into(),
                    Attribute::Opaque(format!("#stablehlo.dot_algorithm{body}")),
                ));
                Ok(())
            }
            (_, "contracting_dims") | (_, "batching_dims") => {
                let lhs = self.parse_i64_list()?;
                self.expect_bare("x")?;
                let rhs = self.parse_i64_list()?;
                let what = if kw == "contracting_dims" {
                    "contracting"
                } else {
                    "batching"
                };
                out.push((
                    format!("lhs_{what}_dimensions"),
                    Attribute::DenseI64Array(lhs),
                ));
                out.push((
                    format!("rhs_{what}_dimensions"),
                    Attribute::DenseI64Array(rhs),
                ));
                Ok(())
            }
            (_, "precision") => {
                self.expect(TokKind::LSquare, "'['")?;
                let mut items = Vec::new();
                if !self.eat(TokKind::RSquare)? {
                    loop {
                        let tok = self.expect(TokKind::Bare, "a precision")?;
                        let value =
                            parse_enum_value("precision", self.text(tok)).ok_or_else(|| {
                                self.err_at(
                                    tok.start,
                                    format!("unknown precision '{}'", self.text(tok)),
                                )
                            })?;
                        items.push(value);
                        if self.eat(TokKind::RSquare)? {
                            break;
                        }
                        self.expect(TokKind::Comma, "',' or ']'")?;
                    }
                }
                out.push(("precision_config".into(), Attribute::Array(items)));
                Ok(())
            }
            (_, "config") => {
                let s = self.parse_string()?;
                out.push(("einsum_config".into(), Attribute::String(s)));
                Ok(())
            }
            _ => self.parse_named_value(kw, out),
        }
    }

    fn push_enum(
        &mut self,
        out: &mut Vec<NamedAttribute>,
        name: &str,
        enum_kind: &str,
    ) -> PResult<()> {
        let tok = self.expect(TokKind::Bare, "an enum value")?;
        let value = parse_enum_value(enum_kind, self.text(tok)).ok_or_else(|| {
            self.err_at(
                tok.start,
                format!("unknown {enum_kind} '{}'", self.text(tok)),
            )
        })?;
        out.push((name.to_string(), value));
        Ok(())
    }

    /// Parses `[0:2, 1:3:1]`.
    fn parse_slice_ranges(&mut self, out: &mut Vec<NamedAttribute>) -> PResult<()> {
        self.expect(TokKind::LSquare, "'['")?;
        let (mut start, mut limit, mut strides) = (Vec::new(), Vec::new(), Vec::new());
        if !self.eat(TokKind::RSquare)? {
            loop {
                start.push(self.parse_i64()?);
                self.expect(TokKind::Colon, "':' in a slice range")?;
                limit.push(self.parse_i64()?);
                strides.push(if self.eat(TokKind::Colon)? {
                    self.parse_i64()?
                } else {
                    1
                });
                if self.eat(TokKind::RSquare)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ']'")?;
            }
        }
        out.push(("start_indices".into(), Attribute::DenseI64Array(start)));
        out.push(("limit_indices".into(), Attribute::DenseI64Array(limit)));
        out.push(("strides".into(), Attribute::DenseI64Array(strides)));
        Ok(())
    }

    /// `stablehlo.constant {attrs} dense<...> : type`.
    fn parse_constant(&mut self, kind: OpKind) -> PResult<ParsedOp> {
        let mut attributes = Vec::new();
        if self.at(TokKind::LBrace) {
            attributes = self.parse_attr_dict()?;
        }
        let (value, ty) = if self.at_bare("dense") {
            self.parse_dense_attr()?
        } else if self.at_bare("dense_resource") {
            self.parse_dense_resource_attr()?
        } else {
            return Err(self.expected("a dense<...> or dense_resource<...> value"));
        };
        attributes.insert(0, ("value".to_string(), value));
        Ok(ParsedOp {
            kind,
            operands: Vec::new(),
            attributes,
            regions: Vec::new(),
            result_types: vec![ty],
        })
    }

    /// `stablehlo.while(%iterArg = %init, ...) : types attributes {...} cond {...} do {...}`.
    fn parse_while(&mut self) -> PResult<ParsedOp> {
        self.expect(TokKind::LParen, "'(' after stablehlo.while")?;
        let mut names: Vec<Token> = Vec::new();
        let mut operands = Vec::new();
        if !self.eat(TokKind::RParen)? {
            loop {
                names.push(self.expect(TokKind::Percent, "an iteration argument '%...'")?);
                self.expect(TokKind::Equal, "'='")?;
                operands.push(self.parse_value_use()?);
                if self.eat(TokKind::RParen)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or ')'")?;
            }
        }
        let mut types = Vec::new();
        if !operands.is_empty() {
            self.expect(TokKind::Colon, "':' and the operand types")?;
            loop {
                types.push(self.parse_type()?);
                if !self.eat(TokKind::Comma)? {
                    break;
                }
            }
            if types.len() != operands.len() {
                return Err(self.err(format!(
                    "{} operands but {} types",
                    operands.len(),
                    types.len()
                )));
            }
        }
        let attributes = if self.eat_bare("attributes")? {
            self.parse_attr_dict()?
        } else {
            Vec::new()
        };
        let args: Vec<(Token, Type)> = names.into_iter().zip(types.iter().cloned()).collect();
        self.expect_bare("cond")?;
        let cond = self.parse_region_named_args(&args)?;
        self.expect_bare("do")?;
        let body = self.parse_region_named_args(&args)?;
        Ok(ParsedOp {
            kind: OpKind::While,
            operands,
            attributes,
            regions: vec![cond, body],
            result_types: types,
        })
    }

    /// `stablehlo.reduce(%x init: %i), ... applies OP across dimensions = [..] : type`
    /// or the same with `reducer(%a: T, %b: T) ... { body }`.
    fn parse_reduce(&mut self) -> PResult<ParsedOp> {
        let mut inputs = Vec::new();
        let mut inits = Vec::new();
        loop {
            self.expect(
                TokKind::LParen,
                "'(' opening an '(operand init: value)' pair",
            )?;
            inputs.push(self.parse_value_use()?);
            self.expect_bare("init")?;
            self.expect(TokKind::Colon, "':' after 'init'")?;
            inits.push(self.parse_value_use()?);
            self.expect(TokKind::RParen, "')'")?;
            if !self.eat(TokKind::Comma)? {
                break;
            }
        }
        let n_pairs = inputs.len();
        let mut operands = inputs;
        operands.extend(inits);
        let applies = if self.eat_bare("applies")? {
            let tok = self.expect(TokKind::Bare, "the name of the reduction op")?;
            Some((OpKind::from_name(self.text(tok)), tok))
        } else {
            None
        };
        self.expect_bare("across")?;
        self.expect_bare("dimensions")?;
        self.expect(TokKind::Equal, "'='")?;
        let dims = self.parse_i64_list()?;
        let mut attributes = vec![("dimensions".to_string(), Attribute::DenseI64Array(dims))];
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        self.expect(TokKind::Colon, "':' and the function type")?;
        let sig_start = self.tok.start;
        let TypeOrFn::Function(fn_ty) = self.parse_type_or_fn()? else {
            return Err(self.err_at(sig_start, "expected a function type"));
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
        let region = match applies {
            Some((inner_kind, tok)) => {
                let elem = fn_ty
                    .inputs
                    .first()
                    .and_then(|t| t.as_tensor())
                    .map(|t| t.element_type)
                    .ok_or_else(|| self.err_at(tok.start, "reduce needs tensor operands"))?;
                let scalar = Type::Tensor(TensorType::scalar(elem));
                let lhs = self.func.new_value(scalar.clone());
                let rhs = self.func.new_value(scalar.clone());
                let out = self.func.new_value(scalar);
                let inner = Op::new(inner_kind, vec![lhs, rhs], vec![out]);
                let ret = Op::new(OpKind::Return, vec![out], Vec::new());
                Region {
                    blocks: vec![Block {
                        arguments: vec![lhs, rhs],
                        ops: vec![inner, ret],
                    }],
                }
            }
            None => {
                self.expect_bare("reducer")?;
                let mut firsts = Vec::new();
                let mut seconds = Vec::new();
                while self.eat(TokKind::LParen)? {
                    for (i, list) in [&mut firsts, &mut seconds].into_iter().enumerate() {
                        if i == 1 {
                            self.expect(TokKind::Comma, "','")?;
                        }
                        let name = self.expect(TokKind::Percent, "a reducer argument")?;
                        self.expect(TokKind::Colon, "':'")?;
                        let ty = self.parse_type()?;
                        self.parse_opt_loc()?;
                        list.push((name, ty));
                    }
                    self.expect(TokKind::RParen, "')'")?;
                }
                if firsts.len() != n_pairs {
                    return Err(self.err(format!(
                        "reducer needs {n_pairs} argument pairs, found {}",
                        firsts.len()
                    )));
                }
                firsts.extend(seconds);
                self.parse_region_named_args(&firsts)?
            }
        };
        Ok(ParsedOp {
            kind: OpKind::Reduce,
            operands,
            attributes,
            regions: vec![region],
            result_types: fn_ty.results,
        })
    }

    /// `stablehlo.convolution(%a, %b) dim_numbers = ..., window = {...} {attrs} : type`.
    fn parse_convolution(&mut self) -> PResult<ParsedOp> {
        self.expect(TokKind::LParen, "'('")?;
        let operands = self.parse_value_list()?;
        self.expect(TokKind::RParen, "')'")?;
        let mut attributes = Vec::new();
        self.expect_bare("dim_numbers")?;
        self.expect(TokKind::Equal, "'='")?;
        self.parse_conv_dims(&mut attributes)?;
        self.expect(TokKind::Comma, "','")?;
        self.expect_bare("window")?;
        self.expect(TokKind::Equal, "'='")?;
        self.expect(TokKind::LBrace, "'{'")?;
        if !self.eat(TokKind::RBrace)? {
            loop {
                let kw = self.expect(TokKind::Bare, "a window attribute name")?;
                self.expect(TokKind::Equal, "'='")?;
                match self.text(kw) {
                    "stride" => {
                        let v = self.parse_i64_list()?;
                        attributes.push(("window_strides".into(), Attribute::DenseI64Array(v)));
                    }
                    "lhs_dilate" => {
                        let v = self.parse_i64_list()?;
                        attributes.push(("lhs_dilation".into(), Attribute::DenseI64Array(v)));
                    }
                    "rhs_dilate" => {
                        let v = self.parse_i64_list()?;
                        attributes.push(("rhs_dilation".into(), Attribute::DenseI64Array(v)));
                    }
                    "reverse" => {
                        self.expect(TokKind::LSquare, "'['")?;
                        let mut v = Vec::new();
                        if !self.eat(TokKind::RSquare)? {
                            loop {
                                let b = if self.at(TokKind::Integer) {
                                    self.parse_i64()? != 0
                                } else {
                                    self.parse_bool()?
                                };
                                v.push(b);
                                if self.eat(TokKind::RSquare)? {
                                    break;
                                }
                                self.expect(TokKind::Comma, "',' or ']'")?;
                            }
                        }
                        attributes.push(("window_reversal".into(), Attribute::DenseBoolArray(v)));
                    }
                    "pad" => {
                        self.expect(TokKind::LSquare, "'['")?;
                        let mut pads = Vec::new();
                        if !self.eat(TokKind::RSquare)? {
                            loop {
                                let pair = self.parse_i64_list()?;
                                if pair.len() != 2 {
                                    return Err(self.err("each padding entry needs two values"));
                                }
                                pads.extend(pair);
                                if self.eat(TokKind::RSquare)? {
                                    break;
                                }
                                self.expect(TokKind::Comma, "',' or ']'")?;
                            }
                        }
                        attributes.push(("padding".into(), padding_attr(&pads)));
                    }
                    other => {
                        return Err(
                            self.err_at(kw.start, format!("unknown window attribute '{other}'"))
                        )
                    }
                }
                if self.eat(TokKind::RBrace)? {
                    break;
                }
                self.expect(TokKind::Comma, "',' or '}'")?;
            }
        }
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        let result_types = self.parse_signature(&OpKind::Convolution, operands.len())?;
        Ok(ParsedOp {
            kind: OpKind::Convolution,
            operands,
            attributes,
            regions: Vec::new(),
            result_types,
        })
    }

    /// `@target(%a, ...) {attrs} : type` of custom_call (`call_target_name`) and call (`callee`).
    fn parse_call_like(&mut self, kind: OpKind, attr_name: &str) -> PResult<ParsedOp> {
        let target = self.parse_symbol()?;
        self.expect(TokKind::LParen, "'('")?;
        let operands = self.parse_value_list()?;
        self.expect(TokKind::RParen, "')'")?;
        let target_attr = if kind == OpKind::Call {
            Attribute::SymbolRef(target)
        } else {
            Attribute::String(target)
        };
        let mut attributes = vec![(attr_name.to_string(), target_attr)];
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        self.expect(TokKind::Colon, "':' and the function type")?;
        let sig_start = self.tok.start;
        let TypeOrFn::Function(fn_ty) = self.parse_type_or_fn()? else {
            return Err(self.err_at(sig_start, "expected a function type"));
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
            regions: Vec::new(),
            result_types: fn_ty.results,
        })
    }

    /// `stablehlo.composite "name" %a, %b {attrs} : type`.
    fn parse_composite(&mut self) -> PResult<ParsedOp> {
        let name = self.parse_string()?;
        let operands = self.parse_value_list()?;
        let mut attributes = vec![("name".to_string(), Attribute::String(name))];
        if self.at(TokKind::LBrace) {
            attributes.extend(self.parse_attr_dict()?);
        }
        let result_types = self.parse_signature(&OpKind::Composite, operands.len())?;
        Ok(ParsedOp {
            kind: OpKind::Composite,
            operands,
            attributes,
            regions: Vec::new(),
            result_types,
        })
    }
}

/// A `[n, 2]` i64 elements attribute from flattened (low, high) pairs.
pub(super) fn padding_attr(pads: &[i64]) -> Attribute {
    let data: Vec<u8> = pads.iter().flat_map(|v| v.to_le_bytes()).collect();
    Attribute::Elements(ElementsAttr {
        ty: TensorType::new([(pads.len() / 2) as i64, 2], ElementType::S64),
        data: Bytes::from(data),
        splat: false,
    })
}
