//! The printer: oxla-ir as StableHLO text in the pretty syntax MLIR itself prints.
//!
//! Ops with a StableHLO custom assembly format print in it ([`ops`]); the others, and any op
//! whose attributes or types do not fit its pretty form, print in MLIR's generic syntax.
//! Flattened structured attributes (see [`crate::attrs`]) are regrouped into
//! `#stablehlo.gather<...>`, `#stablehlo.dot<...>` and friends. Values are renamed
//! (`%argN`, `%N`, `%iterArgN`) so every name is unique in its function.
//! The output parses back into the same IR, and MLIR's own parser accepts it.

mod attrs;
mod ops;

pub use attrs::{print_attribute, write_attribute, write_location};

use crate::attrs::{Attribute, NamedAttribute};
use crate::module::{Block, Function, Location, Module, Op, Region, ValueId, Visibility};
use crate::types::Type;
use attrs::{write_dict, write_symbol};
use std::collections::HashMap;
use std::fmt::Write;

/// How to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Print `loc(...)` after ops, functions and the module.
    pub locations: bool,
}

/// Prints `module` as StableHLO text (without locations).
pub fn print_module(module: &Module) -> String {
    print_module_with(module, PrintOptions::default())
}

/// Prints `module` as StableHLO text with the given options.
pub fn print_module_with(module: &Module, options: PrintOptions) -> String {
    let mut out = String::new();
    out.push_str("module");
    if let Some(name) = &module.name {
        out.push(' ');
        write_symbol(&mut out, name);
    }
    if !module.attributes.is_empty() {
        out.push_str(" attributes ");
        write_dict(&mut out, &module.attributes);
    }
    out.push_str(" {\n");
    for declaration in &module.declarations {
        let _ = writeln!(out, "  {declaration}");
    }
    for function in &module.functions {
        let mut printer = Printer::new(function, options);
        printer.print_function(1);
        out.push_str(&printer.out);
    }
    out.push('}');
    write_loc(&mut out, &module.location, options);
    out.push('\n');
    out
}

/// Appends ` loc(...)` when locations are on.
fn write_loc(out: &mut String, loc: &Location, options: PrintOptions) {
    if options.locations {
        out.push_str(" loc(");
        write_location(out, loc);
        out.push(')');
    }
}

/// Writes a type list `a, b`.
fn write_types(out: &mut String, types: &[&Type]) {
    for (i, t) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{t}");
    }
}

/// Writes `(a, b) -> c` or `(a) -> (b, c)`.
fn write_function_type(out: &mut String, inputs: &[&Type], results: &[&Type]) {
    out.push('(');
    write_types(out, inputs);
    out.push_str(") -> ");
    if results.len() == 1 && !matches!(results[0], Type::Opaque(s) if s.starts_with('(')) {
        let _ = write!(out, "{}", results[0]);
    } else {
        out.push('(');
        write_types(out, results);
        out.push(')');
    }
}

/// Prints one function; owns the value names.
pub(crate) struct Printer<'f> {
    pub(crate) out: String,
    pub(crate) func: &'f Function,
    options: PrintOptions,
    names: HashMap<ValueId, String>,
    next_value: usize,
    next_arg: usize,
    next_iter: usize,
}

impl<'f> Printer<'f> {
    fn new(func: &'f Function, options: PrintOptions) -> Printer<'f> {
        Printer {
            out: String::new(),
            func,
            options,
            names: HashMap::new(),
            next_value: 0,
            next_arg: 0,
            next_iter: 0,
        }
    }

    /// The type of `v`, or an opaque placeholder for an out-of-range id.
    pub(crate) fn ty(&self, v: ValueId) -> &'f Type {
        static INVALID: std::sync::OnceLock<Type> = std::sync::OnceLock::new();
        self.func
            .values
            .get(v.index())
            .unwrap_or_else(|| INVALID.get_or_init(|| Type::Opaque("<<invalid value>>".into())))
    }

    pub(crate) fn types(&self, vs: &[ValueId]) -> Vec<&'f Type> {
        vs.iter().map(|&v| self.ty(v)).collect()
    }

    /// The printed name of a use of `v`.
    pub(crate) fn name(&self, v: ValueId) -> String {
        self.names
            .get(&v)
            .cloned()
            .unwrap_or_else(|| format!("%undefined_{}", v.0))
    }

    /// Names a block argument `%argN`.
    pub(crate) fn name_arg(&mut self, v: ValueId) -> String {
        let name = format!("%arg{}", self.next_arg);
        self.next_arg += 1;
        self.names.insert(v, name.clone());
        name
    }

    /// Names a while iteration argument; returns the name.
    pub(crate) fn name_iter_arg(&mut self) -> String {
        let name = format!("%iterArg{}", self.next_iter);
        self.next_iter += 1;
        name
    }

    pub(crate) fn set_name(&mut self, v: ValueId, name: String) {
        self.names.insert(v, name);
    }

    /// Writes operands `%a, %b`.
    pub(crate) fn write_operands(&mut self, vs: &[ValueId]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let name = self.name(v);
            self.out.push_str(&name);
        }
    }

    /// Writes `(in) -> out` for an op.
    pub(crate) fn write_op_function_type(&mut self, op: &Op) {
        let inputs = self.types(&op.operands);
        let results = self.types(&op.results);
        write_function_type(&mut self.out, &inputs, &results);
    }

    /// Writes ` {attrs}` for the attributes not in `consumed`, if any.
    pub(crate) fn write_attr_dict_except(&mut self, attrs: &[NamedAttribute], consumed: &[&str]) {
        let rest: Vec<NamedAttribute> = attrs
            .iter()
            .filter(|(n, _)| !consumed.contains(&n.as_str()))
            .cloned()
            .collect();
        if !rest.is_empty() {
            self.out.push(' ');
            write_dict(&mut self.out, &rest);
        }
    }

    pub(crate) fn indent_pub(&mut self, level: usize) {
        self.indent(level);
    }

    fn indent(&mut self, level: usize) {
        for _ in 0..level {
            self.out.push_str("  ");
        }
    }

    fn print_function(&mut self, level: usize) {
        let f = self.func;
        self.indent(level);
        self.out.push_str("func.func ");
        self.out.push_str(match f.visibility {
            Visibility::Public => "public ",
            Visibility::Private => "private ",
            Visibility::Nested => "nested ",
        });
        write_symbol(&mut self.out, &f.name);
        self.out.push('(');
        let entry_args: Option<&[ValueId]> = f.body.blocks.first().map(|b| b.arguments.as_slice());
        for (i, ty) in f.ty.inputs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            if let Some(&v) = entry_args.and_then(|a| a.get(i)) {
                let name = self.name_arg(v);
                let _ = write!(self.out, "{name}: ");
            }
            let _ = write!(self.out, "{ty}");
            if let Some(attrs) = f.arg_attrs.get(i).filter(|a| !a.is_empty()) {
                self.out.push(' ');
                write_dict(&mut self.out, attrs);
            }
        }
        self.out.push(')');
        let any_res_attrs = f.res_attrs.iter().any(|a| !a.is_empty());
        if !f.ty.results.is_empty() {
            self.out.push_str(" -> ");
            let parens = f.ty.results.len() > 1
                || any_res_attrs
                || matches!(&f.ty.results[0], Type::Opaque(s) if s.starts_with('('));
            if parens {
                self.out.push('(');
            }
            for (i, ty) in f.ty.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "{ty}");
                if let Some(attrs) = f.res_attrs.get(i).filter(|a| !a.is_empty()) {
                    self.out.push(' ');
                    write_dict(&mut self.out, attrs);
                }
            }
            if parens {
                self.out.push(')');
            }
        }
        if !f.attributes.is_empty() {
            self.out.push_str(" attributes ");
            write_dict(&mut self.out, &f.attributes);
        }
        if !f.body.blocks.is_empty() {
            self.out.push_str(" {\n");
            for (i, block) in f.body.blocks.iter().enumerate() {
                if i > 0 {
                    self.write_block_label(block, i, level);
                }
                for op in &block.ops {
                    self.print_op(op, level + 1, true);
                }
            }
            self.indent(level);
            self.out.push('}');
        }
        write_loc(&mut self.out, &f.location, self.options);
        self.out.push('\n');
    }

    /// Writes `^bbN(%a: T, ...):` at `level`, naming the arguments.
    fn write_block_label(&mut self, block: &Block, index: usize, level: usize) {
        self.indent(level);
        let _ = write!(self.out, "^bb{index}");
        if !block.arguments.is_empty() {
            self.out.push('(');
            for (i, &v) in block.arguments.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let name = self.name_arg(v);
                let ty = self.ty(v);
                let _ = write!(self.out, "{name}: {ty}");
            }
            self.out.push(')');
        }
        self.out.push_str(":\n");
    }

    /// Writes a region `{ ... }` whose ops sit at `level + 1`; the entry block label is
    /// printed only when `entry_label` and the block has arguments.
    pub(crate) fn write_region(&mut self, region: &Region, level: usize, entry_label: bool) {
        self.out.push_str("{\n");
        for (i, block) in region.blocks.iter().enumerate() {
            if i > 0 || (entry_label && !block.arguments.is_empty()) {
                self.write_block_label(block, i, level);
            }
            for op in &block.ops {
                self.print_op(op, level + 1, false);
            }
        }
        self.indent(level);
        self.out.push('}');
    }

    /// Prints one op on its own line(s) at `level`.
    fn print_op(&mut self, op: &Op, level: usize, in_func_body: bool) {
        self.indent(level);
        // Name the results first: `%N`, or `%N:k` with uses `%N#i`.
        if !op.results.is_empty() {
            let base = format!("%{}", self.next_value);
            self.next_value += 1;
            if op.results.len() == 1 {
                self.set_name(op.results[0], base.clone());
                self.out.push_str(&base);
            } else {
                for (i, &r) in op.results.iter().enumerate() {
                    self.set_name(r, format!("{base}#{i}"));
                }
                let _ = write!(self.out, "{base}:{}", op.results.len());
            }
            self.out.push_str(" = ");
        }
        let mark = self.out.len();
        if !self.print_pretty(op, level, in_func_body) {
            self.out.truncate(mark);
            self.print_generic(op, level);
        }
        write_loc(&mut self.out, &op.location, self.options);
        self.out.push('\n');
    }

    /// Prints an op in MLIR's generic syntax.
    fn print_generic(&mut self, op: &Op, level: usize) {
        let mut out = std::mem::take(&mut self.out);
        attrs::write_string(&mut out, op.kind.name());
        self.out = out;
        self.out.push('(');
        self.write_operands(&op.operands);
        self.out.push(')');
        let grouped = ops::regroup_attributes(op);
        let (props, discardable): (Vec<_>, Vec<_>) = grouped
            .into_iter()
            .partition(|(name, _)| !name.contains('.'));
        if !props.is_empty() {
            self.out.push_str(" <");
            write_dict(&mut self.out, &props);
            self.out.push('>');
        }
        if !op.regions.is_empty() {
            self.out.push_str(" (");
            for (i, region) in op.regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.write_region(region, level, true);
            }
            self.out.push(')');
        }
        if !discardable.is_empty() {
            self.out.push(' ');
            write_dict(&mut self.out, &discardable);
        }
        self.out.push_str(" : ");
        self.write_op_function_type(op);
    }

    /// Writes an attribute value.
    pub(crate) fn write_attr(&mut self, attr: &Attribute) {
        write_attribute(&mut self.out, attr);
    }
}
