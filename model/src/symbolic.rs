//! A model with symbolic dimensions on a device: compiled once at each symbol's maximum
//! (`weft_graph::symbolic`), run at any length of its range ([`Executable::run_at`]).
//! A run pads the inputs to the maximum with zeros, puts each symbol's value in the
//! input the masks read, runs every kernel at the maximum, and cuts the outputs back to
//! the length asked for.

use ndarray::ArrayD;
use weft_graph::symbolic::{Binding, BoundSymbol, cut, pad, value_input_name};
use weft_runtime::Device;

use crate::error::ModelError;
use crate::executable::{Executable, Symbols};

impl Executable {
    /// The executable with `binding`'s value inputs moved out of the inputs a caller
    /// gives (what `CompiledModel::load` does with a compiled model's binding), each
    /// holding its symbol's maximum until a run says otherwise (a timing without a run
    /// times the model at the maximum). On an error, what was loaded is freed.
    pub(crate) fn with_symbols(
        mut self,
        binding: &Binding,
        dev: &mut dyn Device,
    ) -> Result<Executable, ModelError> {
        let mut values = Vec::with_capacity(binding.symbols.len());
        for s in &binding.symbols {
            let name = value_input_name(&s.name);
            if let Some(i) = self.inputs.iter().position(|io| io.name == name) {
                values.push(self.inputs.remove(i));
            }
        }
        self.symbols = Symbols {
            binding: binding.clone(),
            values,
        };
        if let Err(e) = self.symbols.upload_maxima(dev) {
            self.free(dev);
            return Err(e);
        }
        Ok(self)
    }

    /// The symbolic dimensions a run takes (empty for a model of static shapes).
    pub fn symbols(&self) -> &[BoundSymbol] {
        &self.symbols.binding.symbols
    }

    /// Runs the model with each symbol of `values` (by name: every symbol once) at the
    /// length given, on `inputs` at those lengths, and returns the outputs at those
    /// lengths: the same kernels whatever the lengths, each launched at the maximum.
    /// A length outside a symbol's range, a name that is no symbol, or an input of
    /// another length is an error ([`ModelError::Symbolic`], [`ModelError::Input`]).
    pub fn run_at(
        &self,
        dev: &mut dyn Device,
        values: &[(&str, usize)],
        inputs: &[ArrayD<f32>],
    ) -> Result<Vec<ArrayD<f32>>, ModelError> {
        let symbols = &self.symbols.binding.symbols;
        if let Some((name, _)) = values
            .iter()
            .find(|(name, _)| !symbols.iter().any(|s| s.name == *name))
        {
            let known: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
            return Err(ModelError::Symbolic {
                symbol: name.to_string(),
                what: format!(
                    "the model has no symbolic dimension of that name (it has: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        }
        let mut lengths = Vec::with_capacity(symbols.len());
        for s in symbols {
            let given: Vec<usize> = values
                .iter()
                .filter(|(name, _)| *name == s.name)
                .map(|&(_, n)| n)
                .collect();
            let n = match given.as_slice() {
                [n] => *n,
                [] => {
                    return Err(ModelError::Symbolic {
                        symbol: s.name.clone(),
                        what: format!("no length given (it takes {}..{})", s.min, s.max),
                    });
                }
                [_, _, ..] => {
                    return Err(ModelError::Symbolic {
                        symbol: s.name.clone(),
                        what: format!("given {} times", given.len()),
                    });
                }
            };
            if !(s.min..=s.max).contains(&n) {
                return Err(ModelError::Symbolic {
                    symbol: s.name.clone(),
                    what: format!(
                        "length {n} is outside the range {}..{} the model was compiled for",
                        s.min, s.max
                    ),
                });
            }
            lengths.push(n);
        }
        if inputs.len() != self.inputs.len() {
            return Err(ModelError::Input {
                name: self.name().to_string(),
                what: format!(
                    "the model takes {} inputs, {} given",
                    self.inputs.len(),
                    inputs.len()
                ),
            });
        }
        let mut padded = Vec::with_capacity(inputs.len());
        for (i, (x, io)) in inputs.iter().zip(&self.inputs).enumerate() {
            let mut want = io.shape.clone();
            for (s, &n) in symbols.iter().zip(&lengths) {
                for d in &s.inputs[i] {
                    want[d.axis] = want[d.axis] / s.max * n;
                }
            }
            if x.shape() != want.as_slice() {
                return Err(ModelError::Input {
                    name: io.name.clone(),
                    what: format!(
                        "shape {:?} given, the model takes {want:?} at {}",
                        x.shape(),
                        at_text(symbols, &lengths)
                    ),
                });
            }
            let mut x = x.clone();
            for (s, &n) in symbols.iter().zip(&lengths) {
                x = pad(&x, &s.inputs[i], n, s.max);
            }
            padded.push(x);
        }
        self.symbols.upload(dev, &lengths)?;
        let outputs = self.run_as_built(dev, &padded)?;
        Ok(outputs
            .into_iter()
            .enumerate()
            .map(|(o, mut y)| {
                for (s, &n) in symbols.iter().zip(&lengths) {
                    y = cut(&y, &s.outputs[o], n, s.max);
                }
                y
            })
            .collect())
    }
}

/// `seq=17, batch=2`.
fn at_text(symbols: &[BoundSymbol], lengths: &[usize]) -> String {
    symbols
        .iter()
        .zip(lengths)
        .map(|(s, n)| format!("{}={n}", s.name))
        .collect::<Vec<_>>()
        .join(", ")
}
