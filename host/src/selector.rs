//! Kubernetes label and field selectors (parsing and matching), from the
//! `herald-grammar` crate, so the host, the embedded API server and the
//! SDK's test host agree on the grammar.

pub use herald_grammar::selector::{
    FieldOperator, FieldSelector, FieldTerm, LabelSelector, Operator, Requirement, SelectorError,
    validate_label,
};
