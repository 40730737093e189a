//! [`ElementKind`]: how an array's elements are laid out and which Arrow type they become.

use arrow::datatypes::DataType as ArrowType;

/// How the elements of an array are laid out and which Arrow type they become.
#[derive(Debug, Clone, PartialEq)]
pub enum ElementKind {
    /// `fixed_length_utf32` with `length_bytes` bytes per element.
    Utf32 {
        /// Bytes per element (a positive multiple of 4).
        length_bytes: usize,
    },
    /// The variable-length `string` data type.
    String,
    /// Variable-length bytes (V3 `variable_length_bytes`, V2 `|O` with the `vlen-bytes`
    /// filter), read as `Binary`.
    VariableBytes,
    /// NumPy's `S` (`null_terminated_bytes`, V2 `|S3`): `length_bytes` bytes per element, read
    /// as `Binary` without their trailing NULs.
    Bytes {
        /// Bytes per element.
        length_bytes: usize,
    },
    /// A fixed-size numeric, boolean or temporal type, held in native byte order. NumPy's
    /// `datetime64`/`timedelta64` are `int64` in storage (NaT is null); `D` becomes `Date32`.
    Primitive(ArrowType),
}
