//! The base layer every C object is built on: the panic boundary, the error
//! object and result codes, the handle layer, argument and text conversion,
//! header lists, the C enums and their names, and the callback plumbing. Nothing
//! here depends on an object module.

pub mod boundary;
pub mod callback;
pub mod enums;
pub mod error;
pub mod handles;
pub mod headers;
pub mod result;
pub mod text;
pub(crate) mod vocabulary;
