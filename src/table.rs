//! The table model: which columns a node gives, in which order, with which Arrow types.
//!
//! - An array location: one `UInt64` index column per dimension, then the value column.
//! - A group location: its direct child arrays. A 1-D child named like a dimension of the
//!   others is a coordinate (xarray's convention) and fills that dimension's column; the
//!   remaining children are the value columns, in the group's order (as its consolidated
//!   metadata lists them, else by name: `node::discover::in_listed_order`), or as listed in the
//!   `arrays` option: those of the most dimensions, of one shape, and 1-D arrays along one of
//!   their named dimensions, repeated along the others as coordinates are.

use crate::field_metadata;
use crate::store_version::StoreVersion;
use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};

use crate::cf::{CfDecoding, TextEncoding};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;
use crate::node::{ArrayNode, ElementKind, GroupNode, Node, UnreadableArray};
use crate::options::{InvalidUtf32, StringType, ZarrOptions};
use crate::store::ZarrStore;

/// Where a column's values come from.
#[derive(Debug, Clone)]
pub(crate) enum ColumnSource {
    /// The element index along dimension `dim`.
    Index {
        /// The dimension.
        dim: usize,
    },
    /// A coordinate array's values along dimension `dim`.
    Coordinate {
        /// The dimension.
        dim: usize,
        /// The 1-D coordinate array.
        array: Arc<ArrayNode>,
    },
    /// An array along some of the table's dimensions (its dimension `k` is the table's
    /// `dims[k]`), repeated along the others: a 0-D array (`crs`) in every row, a 2-D
    /// `lat(y, x)` beside `temp(time, y, x)`.
    Broadcast {
        /// The table dimension of each of the array's dimensions.
        dims: Vec<usize>,
        /// The array.
        array: Arc<ArrayNode>,
    },
    /// An array's elements.
    Value {
        /// The array.
        array: Arc<ArrayNode>,
    },
}

impl ColumnSource {
    /// The array the column's values come from (`None` for an index column).
    pub(crate) fn array(&self) -> Option<&ArrayNode> {
        match self {
            Self::Index { .. } => None,
            Self::Coordinate { array, .. }
            | Self::Broadcast { array, .. }
            | Self::Value { array } => Some(array),
        }
    }
}

/// The node with its netCDF character arrays joined into strings, as xarray decodes them
/// (`node/characters.rs`). A group's character array that cannot be joined is unreadable, as
/// an array of invalid metadata is: the group's other arrays stay readable.
fn with_strings_joined(node: Node) -> Result<Node> {
    let why = |why: &str| {
        format!(
            "it is a netCDF character array (S1, its last dimension the string length), which \
             xarray joins into strings, but {why}; decode_cf = false reads its characters one \
             per row"
        )
    };
    match node {
        Node::Array(array) => match &array.characters {
            Some(Ok(joined)) => Ok(Node::Array(ArrayNode::clone(joined))),
            Some(Err(e)) => Err(ZarrError::metadata(&array.display, why(e))),
            None => Ok(Node::Array(array)),
        },
        Node::Group(mut group) => {
            let mut arrays = Vec::with_capacity(group.arrays.len());
            for array in std::mem::take(&mut group.arrays) {
                match &array.characters {
                    Some(Ok(joined)) => arrays.push(ArrayNode::clone(joined)),
                    Some(Err(e)) => group.unreadable.push(UnreadableArray {
                        name: array.name.clone(),
                        error: why(e),
                    }),
                    None => arrays.push(array),
                }
            }
            group.arrays = arrays;
            group.unreadable.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(Node::Group(group))
        }
    }
}

/// Where a group's array goes in its table.
enum Placement {
    /// The table's shape, along its dimensions: element by element.
    Aligned,
    /// The table dimension of each of the array's dimensions (fewer, or in another order).
    Along(Vec<usize>),
}

/// One column of the table.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    /// Column name.
    pub name: String,
    /// Where the values come from.
    pub source: ColumnSource,
    /// What its values go through, decided once here and executed by the scan.
    pub plan: ValuePlan,
}

/// What a column's stored elements go through on their way to Arrow, decided once per column
/// when the table is built from the options and the array's attributes: the scan executes it
/// and derives nothing from the options itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ValuePlan {
    /// The column's Arrow type.
    pub data_type: ArrowType,
    /// The CF decoding of stored numbers (`decode_cf` and the attributes ask for one).
    pub cf: Option<CfDecoding>,
    /// Bytes whose `_Encoding` is `ascii` are checked as ASCII (under `decode_cf`).
    pub ascii_only: bool,
    /// Elements equal to the fill value become NULL (`fill_as_null`).
    pub fill_as_null: bool,
    /// What an invalid UTF-32 code unit becomes (`invalid_utf32`).
    pub invalid_utf32: InvalidUtf32,
}

impl ValuePlan {
    /// The plan of an index column: positions, nothing to decode.
    fn index() -> Self {
        Self {
            data_type: ArrowType::UInt64,
            cf: None,
            ascii_only: false,
            fill_as_null: false,
            invalid_utf32: InvalidUtf32::Error,
        }
    }
}

/// A node mapped to a table.
#[derive(Debug)]
pub(crate) struct TableModel {
    /// The store.
    pub store: ZarrStore,
    /// The node's path inside the store.
    pub path: String,
    /// The node as shown to users (`store/path`).
    pub display: String,
    /// The shape shared by all value arrays; rows are its elements.
    pub shape: Vec<u64>,
    /// The array whose chunk grid divides the table into work units.
    pub grid: Arc<ArrayNode>,
    /// The columns, in schema order.
    pub columns: Vec<Column>,
    /// The Arrow schema.
    pub schema: SchemaRef,
    /// The options the table was opened with.
    pub options: ZarrOptions,
    /// The size limits every read of this table keeps to (from `options`).
    pub limits: Limits,
    /// The opened node (for `inspect` and provenance); a group's arrays are its columns, not
    /// kept here again.
    pub node: Node,
    /// A group's arrays that are not in its table, each with why (`time_bnds(time, bnds):
    /// dimension bnds not in the table`): shown in `EXPLAIN` and `inspect`.
    pub left_out: Vec<String>,
    /// The store's version as the metadata was read (see `store_version`): a scan whose
    /// store was replaced meanwhile fails instead of mixing two stores. `None`: not checked.
    pub version: Option<StoreVersion>,
}

impl TableModel {
    /// Number of rows: the element count of `shape`, at most `i64::MAX` (DataFusion counts rows
    /// as `i64`: a table of 2^63 rows could not answer `count(*)` from its shape, and a scan of
    /// that many rows never ends).
    pub(crate) fn num_rows(&self) -> Result<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|&rows| i64::try_from(rows).is_ok())
            .ok_or_else(|| {
                ZarrError::metadata(
                    &self.display,
                    format!(
                        "shape {:?} has more elements than a table has rows (at most 2^63 - 1)",
                        self.shape
                    ),
                )
            })
    }

    /// Maps an opened node to a table.
    pub(crate) fn new(store: ZarrStore, node: Node, options: ZarrOptions) -> Result<Self> {
        let node = match options.decode_cf {
            true => with_strings_joined(node)?,
            false => node,
        };
        match node {
            Node::Array(array) => {
                let node = Node::Array(array.clone());
                Self::for_array(store, Arc::new(array), node, options)
            }
            Node::Group(mut group) => {
                // The arrays become the columns; the node keeps the rest.
                let arrays = std::mem::take(&mut group.arrays);
                Self::for_group(store, arrays, group, options)
            }
        }
    }

    fn for_array(
        store: ZarrStore,
        array: Arc<ArrayNode>,
        node: Node,
        options: ZarrOptions,
    ) -> Result<Self> {
        let value_plan = value_plan(&array, &options)?;
        let mut columns = Vec::new();
        for dim in 0..array.shape.len() {
            columns.push(Column {
                name: index_name(
                    &array.dimension_names,
                    dim,
                    std::slice::from_ref(&array.name),
                ),
                source: ColumnSource::Index { dim },
                plan: ValuePlan::index(),
            });
        }
        columns.push(Column {
            name: array.name.clone(),
            source: ColumnSource::Value {
                array: array.clone(),
            },
            plan: value_plan,
        });
        Self::finish(
            store,
            array.path.clone(),
            array.display.clone(),
            array.shape.clone(),
            array,
            columns,
            node,
            options,
        )
    }

    fn for_group(
        store: ZarrStore,
        arrays: Vec<ArrayNode>,
        mut group: GroupNode,
        options: ZarrOptions,
    ) -> Result<Self> {
        let all: Vec<Arc<ArrayNode>> = arrays.into_iter().map(Arc::new).collect();
        let inherited: Vec<Arc<ArrayNode>> = std::mem::take(&mut group.inherited)
            .into_iter()
            .map(Arc::new)
            .collect();
        let dims_of = |a: &ArrayNode| -> Vec<String> {
            a.dimension_names.iter().flatten().cloned().collect()
        };
        // A 1-D array whose name is its own dimension name and a dimension of another child.
        let is_coordinate = |a: &ArrayNode| {
            a.shape.len() == 1
                && a.dimension_names.first().and_then(Option::as_ref) == Some(&a.name)
                && a.kind.is_some()
                && all
                    .iter()
                    .any(|o| o.name != a.name && dims_of(o).contains(&a.name))
        };
        let coordinates: Vec<Arc<ArrayNode>> =
            all.iter().filter(|a| is_coordinate(a)).cloned().collect();

        // A table of every array names one whose metadata is invalid; naming others skips it.
        let named = |u: &&UnreadableArray| {
            options
                .arrays
                .as_ref()
                .is_none_or(|names| names.contains(&u.name))
        };
        if let Some(unreadable) = group.unreadable.iter().find(named) {
            return Err(unreadable.error(&group.display));
        }
        let values: Vec<Arc<ArrayNode>> = match &options.arrays {
            Some(names) => {
                let mut picked = Vec::new();
                for name in names {
                    let array = all.iter().find(|a| &a.name == name).ok_or_else(|| {
                        ZarrError::Option(format!(
                            "arrays names '{name}', which is not an array of group {}; its arrays are: {}",
                            group.display,
                            all.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
                        ))
                    })?;
                    array.element_kind()?;
                    picked.push(array.clone());
                }
                picked
            }
            None => {
                let mut rest: Vec<Arc<ArrayNode>> = all
                    .iter()
                    .filter(|a| a.kind.is_some() && !coordinates.iter().any(|c| c.name == a.name))
                    .cloned()
                    .collect();
                if rest.is_empty() {
                    rest = coordinates.clone();
                }
                rest
            }
        };
        if values.is_empty() {
            let subgroups = match group.groups.as_slice() {
                [] => String::new(),
                names => format!(
                    "; its subgroups are {}: name one as the path (the second argument of \
                     read_zarr, or the table's 'path' option)",
                    names.join(", ")
                ),
            };
            return Err(ZarrError::metadata(
                &group.display,
                format!("group has no arrays of a supported data type to form a table{subgroups}"),
            ));
        }
        // The table's shape is the arrays' of the most dimensions. An array of that shape
        // along the same dimensions is read element by element. Any other array whose
        // dimensions are all named and all the table's goes where xarray's `to_dataframe`
        // puts it: repeated along the table's other dimensions (a station's name beside its
        // hourly readings, a 0-D `crs` in every row), and transposed (`h(xi, eta)` beside
        // `mask(eta, xi)`). Anything else is an error.
        let ndim = values.iter().map(|a| a.shape.len()).max().unwrap_or(0);
        let widest: Vec<&Arc<ArrayNode>> =
            values.iter().filter(|a| a.shape.len() == ndim).collect();
        // The grid and the names of the index columns come from the widest array naming the
        // most dimensions (the first of them).
        let named_dims = |a: &&&Arc<ArrayNode>| a.dimension_names.iter().flatten().count();
        let grid: Option<&Arc<ArrayNode>> = widest.iter().rev().max_by_key(named_dims).copied();
        let place = |a: &ArrayNode| -> Option<Placement> {
            let grid = grid?;
            // An unnamed dimension matches any name.
            let aligned = a.shape == grid.shape
                && (a.dimension_names.iter())
                    .zip(&grid.dimension_names)
                    .all(|(x, g)| x.is_none() || g.is_none() || x == g);
            if aligned {
                return Some(Placement::Aligned);
            }
            let mut dims = Vec::with_capacity(a.shape.len());
            for (name, len) in a.dimension_names.iter().zip(&a.shape) {
                let name = name.as_ref()?;
                let dim = grid
                    .dimension_names
                    .iter()
                    .position(|d| d.as_ref() == Some(name))?;
                if grid.shape[dim] != *len || dims.contains(&dim) {
                    return None;
                }
                dims.push(dim);
            }
            Some(Placement::Along(dims))
        };
        // Without `arrays`, the table is the largest consistent one: an array that does not
        // fit it (CF bounds: `time_bnds(time, bnds)` beside `tas(time, lat, lon)`) is left out
        // and named, readable on its own by its path.
        let mut left_out = Vec::new();
        let values: Vec<Arc<ArrayNode>> = match (&options.arrays, grid) {
            (None, Some(grid)) => (values.iter())
                .filter(|a| match place(a) {
                    Some(_) => true,
                    None => {
                        left_out.push(misfit(a, grid));
                        false
                    }
                })
                .cloned()
                .collect(),
            _ => values.clone(),
        };
        let misfits: Vec<&Arc<ArrayNode>> = values.iter().filter(|a| place(a).is_none()).collect();
        // Named with `arrays`, arrays along other dimensions give xarray's `to_dataframe`: the
        // product over the union of the dimensions (each `tas` value once per `bnds`).
        let extra = match (grid, misfits.is_empty()) {
            (Some(grid), false) => product_dimensions(grid, &values),
            _ => Some(Vec::new()),
        };
        if let (Some(grid), None) = (grid, &extra) {
            let describe = |x: &ArrayNode| {
                let names: Vec<&str> = (x.dimension_names.iter())
                    .map(|d| d.as_deref().unwrap_or("?"))
                    .collect();
                format!("{} {:?} ({})", x.name, x.shape, names.join(", "))
            };
            let misfits: Vec<String> = misfits.iter().map(|a| describe(a)).collect();
            return Err(ZarrError::metadata(
                &group.display,
                format!(
                    "the group's arrays have different shapes or dimensions: the table's are \
                     those of {}, and {} neither has them nor lies along some of its named \
                     dimensions (pairing values by position would pair different places); \
                     choose arrays with the option 'arrays' (comma-separated)",
                    describe(grid),
                    misfits.join(", ")
                ),
            ));
        }
        let Some(first) = grid.map(Arc::clone) else {
            return Err(ZarrError::internal("a group table without arrays"));
        };
        let extra = extra.unwrap_or_default();
        let mut shape = first.shape.clone();
        let mut dimensions = first.dimension_names.clone();
        for (name, len) in &extra {
            shape.push(*len);
            dimensions.push(Some(name.clone()));
        }
        let place = |a: &ArrayNode| match extra.is_empty() {
            true => place(a),
            false => {
                let along = (a.dimension_names.iter().flatten())
                    .map(|name| dimensions.iter().position(|d| d.as_ref() == Some(name)));
                along.collect::<Option<Vec<usize>>>().map(Placement::Along)
            }
        };
        let value_names: Vec<String> = values.iter().map(|a| a.name.clone()).collect();
        let mut columns = Vec::new();
        for (dim, len) in shape.iter().enumerate() {
            let coordinate = dimensions[dim].as_ref().and_then(|d| {
                coordinates
                    .iter()
                    .find(|c| &c.name == d && !value_names.contains(&c.name))
            });
            // None in the group: an ancestor's of the dimension's length, as DataTree
            // inherits it (one of another length is not the same dimension).
            let coordinate = coordinate.or_else(|| {
                let d = dimensions[dim].as_ref()?;
                inherited.iter().find(|c| {
                    &c.name == d && c.shape.first() == Some(len) && !value_names.contains(d)
                })
            });
            // xarray refuses such a dataset ("conflicting sizes for dimension"); an index
            // column under the coordinate's name would pass for its values.
            if let Some(c) = coordinate.filter(|c| c.shape[0] != *len) {
                return Err(ZarrError::metadata(
                    &group.display,
                    format!(
                        "coordinate {} has {} values, but dimension {} of array {} has {len}",
                        c.name, c.shape[0], c.name, first.name
                    ),
                ));
            }
            match coordinate {
                Some(c) => columns.push(Column {
                    name: c.name.clone(),
                    source: ColumnSource::Coordinate {
                        dim,
                        array: c.clone(),
                    },
                    plan: value_plan(c, &options)?,
                }),
                None => columns.push(Column {
                    name: index_name(&dimensions, dim, &value_names),
                    source: ColumnSource::Index { dim },
                    plan: ValuePlan::index(),
                }),
            }
        }
        for array in &values {
            let (name, plan) = (array.name.clone(), value_plan(array, &options)?);
            let array = array.clone();
            let source = match place(&array) {
                // Read and pruned as a coordinate is.
                Some(Placement::Along(dims)) if ndim > 1 && dims.len() == 1 => {
                    ColumnSource::Coordinate {
                        dim: dims[0],
                        array,
                    }
                }
                Some(Placement::Along(dims)) => ColumnSource::Broadcast { dims, array },
                Some(Placement::Aligned) | None => ColumnSource::Value { array },
            };
            columns.push(Column { name, source, plan });
        }
        let mut model = Self::finish(
            store,
            group.path.clone(),
            group.display.clone(),
            shape,
            first,
            columns,
            Node::Group(group),
            options,
        )?;
        model.left_out = left_out;
        Ok(model)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        store: ZarrStore,
        path: String,
        display: String,
        shape: Vec<u64>,
        grid: Arc<ArrayNode>,
        columns: Vec<Column>,
        node: Node,
        options: ZarrOptions,
    ) -> Result<Self> {
        let mut seen = BTreeSet::new();
        for c in &columns {
            if !seen.insert(c.name.as_str()) {
                return Err(ZarrError::metadata(
                    &display,
                    format!("two columns would be named '{}'", c.name),
                ));
            }
        }
        // Each column carries its array's Zarr metadata; a group's table, the group's.
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| {
                let field = Field::new(
                    &c.name,
                    c.plan.data_type.clone(),
                    c.source.array().is_some(),
                );
                match c.source.array() {
                    Some(array) => field.with_metadata(field_metadata::of_array(array)),
                    None => field,
                }
            })
            .collect();
        let schema = match &node {
            Node::Group(group) => {
                Schema::new_with_metadata(fields, field_metadata::of_group(group))
            }
            Node::Array(_) => Schema::new(fields),
        };
        let model = Self {
            store,
            path,
            display,
            shape,
            grid,
            columns,
            schema: Arc::new(schema),
            limits: Limits::of(&options),
            options,
            node,
            left_out: Vec::new(),
            version: None,
        };
        model.num_rows()?;
        Ok(model)
    }
}

/// The dimensions beyond `grid`'s, with their lengths, of the product of `values` over the
/// union of their dimensions, as xarray's `to_dataframe` builds it; `None` when there is no
/// such product: a dimension without a name, one named twice in an array, or one name of
/// two lengths.
fn product_dimensions(grid: &ArrayNode, values: &[Arc<ArrayNode>]) -> Option<Vec<(String, u64)>> {
    let mut all: Vec<(String, u64)> = Vec::new();
    for array in std::iter::once(grid).chain(values.iter().map(|a| a.as_ref())) {
        let mut seen = Vec::new();
        for (name, &len) in array.dimension_names.iter().zip(&array.shape) {
            let name = name.as_ref()?;
            if seen.contains(&name) {
                return None;
            }
            seen.push(name);
            match all.iter().find(|(n, _)| n == name) {
                Some((_, known)) if *known != len => return None,
                Some(_) => {}
                None => all.push((name.clone(), len)),
            }
        }
    }
    Some(all.split_off(grid.shape.len()))
}

/// `array` as left out of a table whose grid is `grid`, with why: `name(dims): reason`.
fn misfit(array: &ArrayNode, grid: &ArrayNode) -> String {
    let names: Vec<&str> = (array.dimension_names.iter())
        .map(|d| d.as_deref().unwrap_or("?"))
        .collect();
    let position =
        |name: &str| (grid.dimension_names.iter()).position(|d| d.as_deref() == Some(name));
    let mut seen = Vec::new();
    let mut reason = "its dimensions are not the table's".to_string();
    for (name, len) in array.dimension_names.iter().zip(&array.shape) {
        let Some(name) = name else {
            reason = "a dimension without a name".into();
            break;
        };
        let Some(dim) = position(name) else {
            reason = format!("dimension {name} not in the table");
            break;
        };
        if let Some(&table_len) = grid.shape.get(dim).filter(|&&l| l != *len) {
            reason = format!("dimension {name} has {len} values, the table's {table_len}");
            break;
        }
        if seen.contains(&dim) {
            reason = format!("dimension {name} twice");
            break;
        }
        seen.push(dim);
    }
    format!("{}({}): {reason}", array.name, names.join(", "))
}

/// The name of the index column of `dim`: the dimension name, or `dim_<i>`; `<name>_index`
/// when it would clash with a value column.
fn index_name(dimensions: &[Option<String>], dim: usize, value_names: &[String]) -> String {
    let name = dimensions
        .get(dim)
        .cloned()
        .flatten()
        .unwrap_or_else(|| format!("dim_{dim}"));
    if value_names.contains(&name) {
        format!("{name}_index")
    } else {
        name
    }
}

/// What an array's elements go through under `options`: the one place the options decide it.
fn value_plan(array: &ArrayNode, options: &ZarrOptions) -> Result<ValuePlan> {
    let cf = match array.element_kind()? {
        ElementKind::Primitive(_) if options.decode_cf => array.cf.clone(),
        _ => None,
    };
    Ok(ValuePlan {
        data_type: arrow_type(array, options)?,
        cf,
        ascii_only: options.decode_cf && array.text == Some(TextEncoding::Ascii),
        fill_as_null: options.fill_as_null,
        invalid_utf32: options.invalid_utf32,
    })
}

/// The Arrow type of an array's elements under `options`.
fn arrow_type(array: &ArrayNode, options: &ZarrOptions) -> Result<ArrowType> {
    Ok(match array.element_kind()? {
        ElementKind::Utf32 { length_bytes } => match options.string_type {
            StringType::Utf8 => ArrowType::Utf8,
            StringType::Utf8View => ArrowType::Utf8View,
            StringType::LargeUtf8 => ArrowType::LargeUtf8,
            StringType::FixedSizeBinary => {
                ArrowType::FixedSizeBinary(i32::try_from(*length_bytes).map_err(|_| {
                    ZarrError::metadata(
                        &array.display,
                        format!("length_bytes {length_bytes} is too large for FixedSizeBinary"),
                    )
                })?)
            }
        },
        ElementKind::String => ArrowType::Utf8,
        ElementKind::Bytes { .. } | ElementKind::VariableBytes
            if options.binary_as_string || (options.decode_cf && array.text.is_some()) =>
        {
            match options.string_type {
                StringType::Utf8View => ArrowType::Utf8View,
                StringType::LargeUtf8 => ArrowType::LargeUtf8,
                StringType::Utf8 | StringType::FixedSizeBinary => ArrowType::Utf8,
            }
        }
        ElementKind::Bytes { .. } | ElementKind::VariableBytes => ArrowType::Binary,
        ElementKind::Primitive(t) if options.decode_cf => {
            let attributes = array.attributes.used();
            crate::cf::attributes::check_packing(t, attributes)
                .map_err(|e| ZarrError::metadata(&array.display, e))?;
            array
                .cf
                .as_ref()
                .map_or_else(|| t.clone(), |cf| cf.arrow_type())
        }
        ElementKind::Primitive(t) => t.clone(),
    })
}
