//! A node's attributes, read with their ONNX defaults; a wrong type is an error naming
//! the node and the attribute.

use crate::error::ImportError;
use crate::proto::attribute_proto::AttributeType;
use crate::proto::{AttributeProto, NodeProto, TensorProto};

/// The attributes of one node.
pub struct Attrs<'a> {
    node: &'a NodeProto,
    /// The node's name (made up where the file has none), for errors.
    pub name: &'a str,
}

impl<'a> Attrs<'a> {
    /// The attributes of `node`, called `name` in errors.
    pub fn new(node: &'a NodeProto, name: &'a str) -> Attrs<'a> {
        Attrs { node, name }
    }

    /// An error about attribute `attr`.
    pub fn err(&self, attr: &str, what: impl Into<String>) -> ImportError {
        ImportError::Attribute {
            node: self.name.to_string(),
            op: self.node.op_type.clone(),
            attr: attr.to_string(),
            what: what.into(),
        }
    }

    /// The attribute named `attr`, checked to be of type `ty`.
    fn get(
        &self,
        attr: &str,
        ty: AttributeType,
    ) -> Result<Option<&'a AttributeProto>, ImportError> {
        let Some(a) = self.node.attribute.iter().find(|a| a.name == attr) else {
            return Ok(None);
        };
        if !a.ref_attr_name.is_empty() {
            return Err(self.err(attr, "refers to a function's attribute outside a function"));
        }
        if a.r#type != ty as i32 {
            let got = AttributeType::try_from(a.r#type)
                .map(|t| t.as_str_name())
                .unwrap_or("an unknown type");
            return Err(self.err(attr, format!("is {got}, not {}", ty.as_str_name())));
        }
        Ok(Some(a))
    }

    /// True where the node has attribute `attr`.
    pub fn has(&self, attr: &str) -> bool {
        self.node.attribute.iter().any(|a| a.name == attr)
    }

    /// An integer attribute, or `default`.
    pub fn int(&self, attr: &str, default: i64) -> Result<i64, ImportError> {
        Ok(self.get(attr, AttributeType::Int)?.map_or(default, |a| a.i))
    }

    /// A flag (0 or 1), or `default`.
    pub fn flag(&self, attr: &str, default: bool) -> Result<bool, ImportError> {
        match self.int(attr, i64::from(default))? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.err(attr, format!("is {v}, not 0 or 1"))),
        }
    }

    /// A float attribute (f32 in the file), or `default`.
    pub fn float(&self, attr: &str, default: f32) -> Result<f64, ImportError> {
        Ok(f64::from(
            self.get(attr, AttributeType::Float)?
                .map_or(default, |a| a.f),
        ))
    }

    /// An integer list, if present.
    pub fn ints(&self, attr: &str) -> Result<Option<&'a [i64]>, ImportError> {
        Ok(self
            .get(attr, AttributeType::Ints)?
            .map(|a| a.ints.as_slice()))
    }

    /// A float list, if present.
    pub fn floats(&self, attr: &str) -> Result<Option<&'a [f32]>, ImportError> {
        Ok(self
            .get(attr, AttributeType::Floats)?
            .map(|a| a.floats.as_slice()))
    }

    /// A string attribute, or `default`.
    pub fn string(&self, attr: &str, default: &str) -> Result<String, ImportError> {
        match self.get(attr, AttributeType::String)? {
            None => Ok(default.to_string()),
            Some(a) => String::from_utf8(a.s.clone()).map_err(|_| self.err(attr, "is not UTF-8")),
        }
    }

    /// A tensor attribute, if present.
    pub fn tensor(&self, attr: &str) -> Result<Option<&'a TensorProto>, ImportError> {
        Ok(self
            .get(attr, AttributeType::Tensor)?
            .and_then(|a| a.t.as_ref()))
    }
}
