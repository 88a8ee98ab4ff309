//! Named shape parameters: `m=1024,n=1024,k=1024`.

use std::fmt;

use weft_ir::echo;

use crate::{OpError, OpSpec};

/// Values for an op's shape parameters, in the op's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<(String, i64)>);

impl Shape {
    /// The op's defaults (the seed's size).
    pub fn defaults(op: &OpSpec) -> Shape {
        Shape(op.dims.iter().map(|(n, v)| (n.to_string(), *v)).collect())
    }

    /// A shape from values in the op's parameter order.
    pub fn from_values(op: &OpSpec, values: &[i64]) -> Result<Shape, OpError> {
        if values.len() != op.dims.len() {
            return Err(OpError::Shape {
                op: op.name.to_string(),
                msg: format!("expected {} values, got {}", op.dims.len(), values.len()),
            });
        }
        let s = Shape(
            op.dims
                .iter()
                .zip(values)
                .map(|((n, _), v)| (n.to_string(), *v))
                .collect(),
        );
        s.validate(op)?;
        Ok(s)
    }

    /// Parses `k=v,...` for op `op`; parameters not given keep their defaults. An empty
    /// string gives the defaults.
    pub fn parse(op: &str, text: &str) -> Result<Shape, OpError> {
        let spec = crate::find(op)?;
        let mut s = Shape::defaults(spec);
        let err = |msg: String| OpError::Shape {
            op: op.to_string(),
            msg,
        };
        // A parameter given twice is refused rather than the last one winning: `m=1,m=2`
        // is a typo for another parameter, and silently measuring m=2 hides it.
        let mut given: Vec<(&str, i64)> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| err(format!("{} is not of the form name=value", echo(part))))?;
            let (k, v) = (k.trim(), v.trim());
            let v: i64 = v
                .parse()
                .map_err(|_| err(format!("{} (for {}) is not an integer", echo(v), echo(k))))?;
            let Some(slot) = s.0.iter_mut().find(|(n, _)| n == k) else {
                let names: Vec<&str> = spec.dims.iter().map(|(n, _)| *n).collect();
                return Err(err(format!(
                    "unknown parameter {}; parameters are: {}",
                    echo(k),
                    names.join(", ")
                )));
            };
            if let Some((_, first)) = given.iter().find(|(n, _)| *n == k) {
                return Err(err(format!(
                    "parameter `{k}` is given twice (values {first} and {v})"
                )));
            }
            given.push((k, v));
            slot.1 = v;
        }
        s.validate(spec)?;
        Ok(s)
    }

    fn validate(&self, op: &OpSpec) -> Result<(), OpError> {
        let err = |msg: String| OpError::Shape {
            op: op.name.to_string(),
            msg,
        };
        for (n, v) in &self.0 {
            let lo = if op.zero_ok.contains(&n.as_str()) {
                0
            } else {
                1
            };
            if *v < lo || *v > i32::MAX as i64 {
                return Err(err(format!("`{n}` = {v} must be in {lo}..=2^31-1")));
            }
        }
        (op.check)(self).map_err(err)
    }

    /// The value of parameter `name` (0 if absent, which the ops never ask for).
    pub fn get(&self, name: &str) -> i64 {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let e = Shape::parse("matmul", "m=1,n=4,m=2")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter `m` is given twice (values 1 and 2)"),
            "{e}"
        );
        // Spaces around a name do not make it another one.
        let e = Shape::parse("vecadd", "n=4, n =4").unwrap_err().to_string();
        assert!(e.contains("`n` is given twice"), "{e}");
        let s = Shape::parse("matmul", "m=1,n=4").unwrap();
        assert_eq!((s.get("m"), s.get("n")), (1, 4));
    }
}
