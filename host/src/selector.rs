//! Kubernetes label and field selectors (parsing and matching), shared with
//! the embedded API server so both sides agree on the grammar.

pub use herald_apiserver::selector::{
    FieldOperator, FieldSelector, FieldTerm, LabelSelector, Operator, Requirement, SelectorError,
};
