//! [`GroupNode`], an opened group with its direct children, [`UnreadableArray`], a child whose
//! metadata could not be read, and [`Node`], either kind of node.

use serde_json::Value;

use super::{ArrayNode, Attributes};
use crate::error::ZarrError;

/// A child array whose metadata could not be read.
#[derive(Debug, Clone)]
pub struct UnreadableArray {
    /// The last path segment.
    pub name: String,
    /// Why, with the array's location.
    pub error: String,
}

impl UnreadableArray {
    /// The error to raise where the array is needed, in group `group`.
    pub fn error(&self, group: &str) -> ZarrError {
        ZarrError::metadata(
            group,
            format!(
                "its array {} cannot be read ({}); choose the others with the option 'arrays' \
                 (comma-separated)",
                self.name, self.error
            ),
        )
    }
}

/// A group node and its direct children.
#[derive(Debug, Clone)]
pub struct GroupNode {
    /// The store and path, as shown in errors.
    pub display: String,
    /// Path relative to the store root.
    pub path: String,
    /// 2 or 3.
    pub zarr_format: u8,
    /// Group attributes.
    pub attributes: Attributes,
    /// Direct child arrays, as the consolidated metadata lists them, else sorted by name.
    pub arrays: Vec<ArrayNode>,
    /// Direct child arrays whose metadata is invalid, sorted by name: the group stays
    /// readable (its other arrays can be named), and a table of it all names them.
    pub unreadable: Vec<UnreadableArray>,
    /// Names of direct child groups, sorted.
    pub groups: Vec<String>,
    /// The group's metadata document, without its attributes and consolidated metadata.
    pub metadata: Value,
    /// Coordinates of its ancestors, nearest first, named as dimensions of its arrays that
    /// have none of their own: xarray's DataTree inherits them (a table takes the first of
    /// the dimension's length).
    pub inherited: Vec<ArrayNode>,
}

/// An opened node.
#[derive(Debug, Clone)]
pub enum Node {
    /// An array.
    Array(ArrayNode),
    /// A group.
    Group(GroupNode),
}
