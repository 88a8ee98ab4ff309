//! Deterministic, collision-free names for emitted code.
//!
//! IR names are for people: two variables may share a name (in nested scopes, or in
//! sibling kernels merged into one function), a name may be a keyword of the target
//! language or contain characters an identifier cannot. [`Namer`] gives every declaration
//! a name that is a valid identifier in every language weft emits, is not a reserved word,
//! and differs from every name visible where it is declared. Names depend only on the
//! order of declarations, never on object identities, so output is stable.

use std::collections::{HashMap, HashSet};

use weft_ir::expr::ThreadAxis;

/// What a name is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameKey {
    /// A variable (by [`weft_ir::expr::Var::id`]).
    Var(u64),
    /// A buffer (by [`weft_ir::expr::Buffer::id`]).
    Buffer(u64),
    /// The cast-once copy of a thread or block index (`threadIdx_x`).
    Builtin(ThreadAxis),
    /// A name the emitter itself introduces (`params`, the kernel's own name, ...).
    Item(&'static str),
    /// The `i`-th tensor map parameter ([`weft_ir::kernel::Kernel::tensor_maps`]).
    TensorMap(usize),
}

/// Turns any string into an identifier valid in C, C++, MSL and WGSL: characters other
/// than ASCII letters, digits and `_` become `_`, runs of `_` collapse to one (C++
/// reserves `__` anywhere; WGSL forbids a leading `__`), and a leading digit or `_` gets a
/// `v` in front.
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    if out.is_empty() || out == "_" {
        return "v".into();
    }
    if out.starts_with(|c: char| c.is_ascii_digit() || c == '_') {
        out.insert(0, 'v');
    }
    out
}

/// Scoped, deterministic naming (see the module docs).
///
/// A name is unique among all names *visible* at its declaration (reserved words, names at
/// enclosing scopes and earlier names of the same scope); a name whose scope has closed
/// may be used again, so sibling loops both get `i`.
#[derive(Debug)]
pub struct Namer {
    reserved: HashSet<&'static str>,
    in_use: HashSet<String>,
    /// Per open scope: the names declared in it, and per key the binding it replaced.
    scopes: Vec<Scope>,
    names: HashMap<NameKey, String>,
}

#[derive(Debug, Default)]
struct Scope {
    declared: Vec<String>,
    shadowed: Vec<(NameKey, Option<String>)>,
}

impl Namer {
    /// A namer avoiding every word of `tables` (see [`crate::keywords`]).
    pub fn new(tables: &[&[&'static str]]) -> Namer {
        Namer {
            reserved: tables.iter().flat_map(|t| t.iter().copied()).collect(),
            in_use: HashSet::new(),
            scopes: vec![Scope::default()],
            names: HashMap::new(),
        }
    }

    fn free(&self, candidate: &str) -> bool {
        !self.reserved.contains(candidate) && !self.in_use.contains(candidate)
    }

    /// Declares `key` in the innermost scope with a name derived from `base`, and returns
    /// it: `base` sanitised, then `_` appended if it is reserved, then `_1`, `_2`, ... until
    /// it is free.
    pub fn declare(&mut self, key: NameKey, base: &str) -> String {
        let mut base = sanitize(base);
        if self.reserved.contains(base.as_str()) {
            base.push('_');
        }
        let mut name = base.clone();
        let mut n = 1;
        while !self.free(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.in_use.insert(name.clone());
        let previous = self.names.insert(key, name.clone());
        // `scopes` is never empty: `new` opens the outermost scope and `pop_scope` keeps it.
        if let Some(scope) = self.scopes.last_mut() {
            scope.declared.push(name.clone());
            scope.shadowed.push((key, previous));
        }
        name
    }

    /// Marks `name` as taken at the outermost scope without binding it to a key (names of
    /// the emitted language that are not in the keyword table, such as `params`).
    pub fn reserve(&mut self, name: &str) {
        self.in_use.insert(name.to_string());
    }

    /// The name bound to `key`, if it is declared and its scope is open.
    pub fn get(&self, key: NameKey) -> Option<&str> {
        self.names.get(&key).map(String::as_str)
    }

    /// Opens a scope (a `{`).
    pub fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    /// Closes the innermost scope: its names become free again and keys declared in it get
    /// back the binding they had before. The outermost scope never closes.
    pub fn pop_scope(&mut self) {
        if self.scopes.len() <= 1 {
            return;
        }
        if let Some(scope) = self.scopes.pop() {
            for name in scope.declared {
                self.in_use.remove(&name);
            }
            for (key, previous) in scope.shadowed.into_iter().rev() {
                match previous {
                    Some(p) => self.names.insert(key, p),
                    None => self.names.remove(&key),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_makes_identifiers() {
        assert_eq!(sanitize("A.shared"), "A_shared");
        assert_eq!(sanitize("__x"), "v_x");
        assert_eq!(sanitize("a__b"), "a_b");
        assert_eq!(sanitize("0i"), "v0i");
        assert_eq!(sanitize(""), "v");
        assert_eq!(sanitize("é"), "v");
    }

    #[test]
    fn scoped_names_are_unique_and_reused() {
        let mut n = Namer::new(&[&["for"]]);
        assert_eq!(n.declare(NameKey::Var(1), "for"), "for_");
        assert_eq!(n.declare(NameKey::Var(2), "i"), "i");
        n.push_scope();
        assert_eq!(n.declare(NameKey::Var(3), "i"), "i_1");
        assert_eq!(n.get(NameKey::Var(2)), Some("i"));
        n.pop_scope();
        assert_eq!(n.get(NameKey::Var(3)), None);
        n.push_scope();
        assert_eq!(n.declare(NameKey::Var(4), "i"), "i_1");
        n.pop_scope();
    }

    #[test]
    fn redeclaring_a_key_in_a_scope_restores_the_outer_binding() {
        let mut n = Namer::new(&[]);
        n.declare(NameKey::Var(1), "x");
        n.push_scope();
        assert_eq!(n.declare(NameKey::Var(1), "x"), "x_1");
        n.pop_scope();
        assert_eq!(n.get(NameKey::Var(1)), Some("x"));
    }
}
