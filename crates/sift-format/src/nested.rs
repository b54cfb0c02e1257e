//! Nested columns: struct, list, large list, fixed-size list and map, to any depth, with
//! nulls at every level.
//!
//! A nested column is stored *shredded*, the way Arrow lays it out: one footer column per
//! node of its type tree, in depth-first order, each an ordinary column chunk going through
//! the ordinary cascade:
//!
//! - a **struct** or **fixed-size list** node stores its presence: a boolean column that is
//!   null where the node is null (its values are all `true`, so they cost nothing);
//! - a **list**, **large list** or **map** node stores its lengths: an `Int32` (`Int64` for
//!   large lists) column that is null where the list is null;
//! - a **leaf** stores its values like a top-level column of its type (dictionary leaves as
//!   their values).
//!
//! Each footer column is named by its path (`s`, `s.a`, `s.tags`, `s.tags.item`) and
//! marks its role with the field metadata key [`NESTED_KEY`]. A struct's children are
//! stored null wherever the struct is null, so a filter on a struct's field (`s.a > 5`) is
//! an ordinary filter on an ordinary row-aligned column. Columns under a list hold one
//! value per element, not per row: their count in a block is the sum of the lengths above
//! them, and a row selection reaches them extended over those lengths (see
//! [`element_selection`]), so that selected rows decode only their own elements.
//!
//! Offsets-and-lengths per level (as Arrow and Vortex store them) were chosen over Dremel's
//! repetition and definition levels: lengths are row-aligned integers that the cascade
//! compresses like any column (runs, frame of reference, dictionaries), a struct's fields
//! stay filterable columns, and a selection reaches the elements with one prefix sum
//! instead of a walk over level streams.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Int32Array, Int64Array, LargeListArray,
    ListArray, MapArray, OffsetSizeTrait, StructArray, make_array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};
use sift_bits::Bitmap;

use crate::error::{Error, Result};
use crate::schema::{ColumnType, DICTIONARY_KEY, StoredField, to_arrow_fields};

/// Field metadata key holding a footer column's role in a nested column: `struct:N` (the
/// next `N` subtrees are its fields), `list`, `large_list`, `fixed_size_list:N`, `map` or
/// `map:sorted` (the next subtree is the element, or the map's entries), or `leaf`.
/// Top-level columns that are not nested do not have it.
pub const NESTED_KEY: &str = "sift.nested";

/// Field metadata key marking a footer column that holds nulls only because an enclosing
/// struct or fixed-size list is null: the field itself is not nullable.
pub const REQUIRED_KEY: &str = "sift.nested.required";

/// Deepest nesting a file may declare (guards the recursion of reading and assembling).
pub const MAX_NESTING: usize = 64;

/// A footer column's role in a nested column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A struct with this many fields; the column holds its presence.
    Struct(usize),
    /// A list (`Int32` lengths).
    List,
    /// A large list (`Int64` lengths).
    LargeList,
    /// A fixed-size list of this size; the column holds its presence.
    FixedSizeList(i32),
    /// A map (`Int32` lengths), whose keys are sorted if `true`.
    Map(bool),
    /// Values of a leaf inside a nested column.
    Leaf,
}

impl Role {
    fn text(self) -> String {
        match self {
            Role::Struct(n) => format!("struct:{n}"),
            Role::List => "list".into(),
            Role::LargeList => "large_list".into(),
            Role::FixedSizeList(n) => format!("fixed_size_list:{n}"),
            Role::Map(false) => "map".into(),
            Role::Map(true) => "map:sorted".into(),
            Role::Leaf => "leaf".into(),
        }
    }

    fn parse(s: &str) -> Option<Role> {
        Some(match s.split_once(':') {
            None => match s {
                "list" => Role::List,
                "large_list" => Role::LargeList,
                "map" => Role::Map(false),
                "leaf" => Role::Leaf,
                _ => return None,
            },
            Some(("struct", n)) => Role::Struct(n.parse().ok()?),
            Some(("fixed_size_list", n)) => {
                Role::FixedSizeList(n.parse().ok().filter(|&n| n >= 0)?)
            }
            Some(("map", "sorted")) => Role::Map(true),
            _ => return None,
        })
    }

    /// Subtrees that follow the column.
    fn children(self) -> usize {
        match self {
            Role::Struct(n) => n,
            Role::Leaf => 0,
            _ => 1,
        }
    }

    /// The type of the column that stores the node.
    fn column_type(self) -> Option<ColumnType> {
        match self {
            Role::Struct(_) | Role::FixedSizeList(_) => Some(ColumnType::Bool),
            Role::List | Role::Map(_) => Some(ColumnType::Int32),
            Role::LargeList => Some(ColumnType::Int64),
            Role::Leaf => None,
        }
    }

    /// Whether the node's children hold one value per element rather than per row.
    fn repeats(self) -> bool {
        matches!(
            self,
            Role::List | Role::LargeList | Role::FixedSizeList(_) | Role::Map(_)
        )
    }
}

/// The footer columns of `field` (stored at `path`), in depth-first order; `None` if a
/// type in it cannot be stored, `Err` if it nests deeper than [`MAX_NESTING`].
///
/// `forced_null`: an enclosing struct or fixed-size list is nullable, so this column holds
/// nulls where it is null, whatever its own field says.
pub(crate) fn expand(
    field: &Field,
    path: String,
    forced_null: bool,
    depth: usize,
    out: &mut Vec<StoredField>,
) -> Result<Option<()>> {
    if depth > MAX_NESTING {
        return Err(Error::Invalid(format!(
            "column '{path}' nests deeper than {MAX_NESTING} levels"
        )));
    }
    let mut metadata: Vec<(String, String)> = field
        .metadata()
        .iter()
        .filter(|(k, _)| ![DICTIONARY_KEY, NESTED_KEY, REQUIRED_KEY].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let nullable = field.is_nullable() || forced_null;
    if nullable && !field.is_nullable() {
        metadata.push((REQUIRED_KEY.into(), "true".into()));
    }
    let (role, children): (Role, Vec<&Field>) = match field.data_type() {
        DataType::Struct(fields) => (
            Role::Struct(fields.len()),
            fields.iter().map(AsRef::as_ref).collect(),
        ),
        DataType::List(f) => (Role::List, vec![f.as_ref()]),
        DataType::LargeList(f) => (Role::LargeList, vec![f.as_ref()]),
        DataType::FixedSizeList(f, n) => (Role::FixedSizeList(*n), vec![f.as_ref()]),
        DataType::Map(f, sorted) => {
            // Arrow requires the entries to be a struct of key and value.
            if !matches!(f.data_type(), DataType::Struct(kv) if kv.len() == 2) {
                return Ok(None);
            }
            (Role::Map(*sorted), vec![f.as_ref()])
        }
        other => {
            let Some(ty) = crate::schema::leaf_type(other, &mut metadata) else {
                return Ok(None);
            };
            if depth > 0 {
                metadata.push((NESTED_KEY.into(), Role::Leaf.text()));
            }
            metadata.sort();
            out.push(StoredField {
                name: path,
                ty,
                nullable,
                metadata,
            });
            return Ok(Some(()));
        }
    };
    metadata.push((NESTED_KEY.into(), role.text()));
    metadata.sort();
    let ty = role.column_type().unwrap_or(ColumnType::Bool);
    out.push(StoredField {
        name: path.clone(),
        ty,
        nullable,
        metadata,
    });
    // Struct children inherit the struct's nulls; fixed-size list elements keep whatever
    // Arrow holds under a null list, which may be null.
    let force = matches!(role, Role::Struct(_) | Role::FixedSizeList(_)) && nullable;
    for child in children {
        let child_path = format!("{path}.{}", child.name());
        if expand(child, child_path, force, depth + 1, out)?.is_none() {
            return Ok(None);
        }
    }
    Ok(Some(()))
}

/// The arrays of the footer columns of one block of a column (`field`'s type), in the
/// order [`expand`] lists them.
pub(crate) fn shred(field: &Field, array: &ArrayRef, out: &mut Vec<ArrayRef>) -> Result<()> {
    match field.data_type() {
        DataType::Struct(fields) => {
            let a = array.as_struct();
            let nulls = a.logical_nulls().filter(|n| n.null_count() > 0);
            out.push(presence(a.len(), nulls.clone()));
            for (f, child) in fields.iter().zip(a.columns()) {
                shred(f, &with_parent_nulls(child, nulls.as_ref())?, out)?;
            }
        }
        DataType::FixedSizeList(f, n) => {
            let a = array.as_fixed_size_list();
            let nulls = a.logical_nulls().filter(|n| n.null_count() > 0);
            out.push(presence(a.len(), nulls));
            let want = a.len() * (*n).max(0) as usize;
            let values = a.values();
            let values = match values.len() == want {
                true => values.clone(),
                false => values.slice(a.offset() * (*n).max(0) as usize, want),
            };
            shred(f, &values, out)?;
        }
        DataType::List(f) => {
            let a = array.as_list::<i32>();
            shred_list(f, a.offsets(), a.nulls(), a.values(), out)?;
        }
        DataType::LargeList(f) => {
            let a = array.as_list::<i64>();
            shred_list(f, a.offsets(), a.nulls(), a.values(), out)?;
        }
        DataType::Map(f, _) => {
            let a = array.as_map();
            let entries: ArrayRef = Arc::new(a.entries().clone());
            shred_list(f, a.offsets(), a.nulls(), &entries, out)?;
        }
        // A leaf: dictionaries are stored as their values.
        DataType::Dictionary(_, values) => out.push(arrow_cast::cast(array, values)?),
        _ => out.push(array.clone()),
    }
    Ok(())
}

/// A list's lengths column (`Int64` for large lists, else `Int32`), then its elements'.
fn shred_list<O: OffsetSizeTrait>(
    element: &Field,
    offsets: &OffsetBuffer<O>,
    nulls: Option<&NullBuffer>,
    values: &ArrayRef,
    out: &mut Vec<ArrayRef>,
) -> Result<()> {
    let (lengths, values) = lengths_and_values(offsets, nulls, values)?;
    let nulls = nulls.filter(|n| n.null_count() > 0).cloned();
    out.push(match O::IS_LARGE {
        true => Arc::new(Int64Array::new(
            lengths.iter().map(|&l| l as i64).collect(),
            nulls,
        )),
        false => Arc::new(Int32Array::new(
            lengths.iter().map(|&l| l as i32).collect(),
            nulls,
        )),
    });
    shred(element, &values, out)
}

/// A presence column: `true` where the node is present, null where it is null.
fn presence(len: usize, nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(BooleanArray::new(BooleanBuffer::new_set(len), nulls))
}

/// `child` with its parent's nulls added to its own.
fn with_parent_nulls(child: &ArrayRef, parent: Option<&NullBuffer>) -> Result<ArrayRef> {
    let Some(parent) = parent else {
        return Ok(child.clone());
    };
    let nulls = NullBuffer::union(Some(parent), child.logical_nulls().as_ref());
    let data = child.to_data().into_builder().nulls(nulls).build()?;
    Ok(make_array(data))
}

/// A list's lengths (0 for a null list) and the elements of its non-null lists, in order.
/// Arrow allows a null list to span elements; they are not stored.
fn lengths_and_values<O: OffsetSizeTrait>(
    offsets: &OffsetBuffer<O>,
    nulls: Option<&NullBuffer>,
    values: &ArrayRef,
) -> Result<(Vec<usize>, ArrayRef)> {
    let mut lengths: Vec<usize> = offsets
        .windows(2)
        .map(|w| (w[1] - w[0]).as_usize())
        .collect();
    let first = offsets[0].as_usize();
    let last = offsets[offsets.len() - 1].as_usize();
    let hidden = nulls.is_some_and(|n| n.iter().zip(&lengths).any(|(v, &l)| !v && l > 0));
    if !hidden {
        return Ok((lengths, values.slice(first, last - first)));
    }
    // Keep only the elements of non-null lists.
    let mut keep = vec![false; values.len()];
    for (i, w) in offsets.windows(2).enumerate() {
        if nulls.is_none_or(|n| n.is_valid(i)) {
            keep[w[0].as_usize()..w[1].as_usize()].fill(true);
        } else {
            lengths[i] = 0;
        }
    }
    let values = arrow_select::filter::filter(values, &BooleanArray::from(keep))?;
    Ok((lengths, values))
}

/// One footer column's place in its nested column.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// The role; `None` for a top-level column that is not nested.
    pub role: Option<Role>,
    /// The footer columns of the node's children.
    pub children: Vec<usize>,
    /// Whether the column holds one value per row (no list above it).
    pub row_aligned: bool,
    /// The subtree's field, as written (dictionary leaves as dictionaries), named by the
    /// column's own name within its parent.
    pub written: FieldRef,
    /// The subtree's field as the scan returns it (dictionary leaves as their values).
    pub stored: FieldRef,
}

/// The nested structure of a file's columns: one [`Node`] per footer column.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub nodes: Vec<Node>,
    /// The footer columns that are top-level columns of the schema.
    pub top: Vec<usize>,
}

impl Layout {
    /// Rebuilds the nested columns from the footer's fields; an error says what is
    /// inconsistent.
    pub fn new(fields: &[&StoredField]) -> std::result::Result<Layout, String> {
        let mut nodes: Vec<Option<Node>> = vec![None; fields.len()];
        let mut top = Vec::new();
        let mut c = 0;
        while c < fields.len() {
            top.push(c);
            c = build(fields, c, None, true, 0, &mut nodes)?;
        }
        Ok(Layout {
            nodes: nodes
                .into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or("a nested column's node was not built")?,
            top,
        })
    }
}

/// The role a stored field declares.
fn role_of(f: &StoredField) -> std::result::Result<Option<Role>, String> {
    match f.metadata.iter().find(|(k, _)| k == NESTED_KEY) {
        None => Ok(None),
        Some((_, v)) => Role::parse(v)
            .map(Some)
            .ok_or_else(|| format!("column '{}': unknown nested role {v:?}", f.name)),
    }
}

/// Builds the subtree at footer column `c` (whose parent's name is `parent`); returns the
/// column after it.
fn build(
    fields: &[&StoredField],
    c: usize,
    parent: Option<&str>,
    row_aligned: bool,
    depth: usize,
    nodes: &mut [Option<Node>],
) -> std::result::Result<usize, String> {
    if depth > MAX_NESTING {
        return Err(format!(
            "a nested column nests deeper than {MAX_NESTING} levels"
        ));
    }
    let f = fields
        .get(c)
        .ok_or_else(|| format!("a nested column ends after column {c}: children are missing"))?;
    let role = role_of(f)?;
    let name = match parent {
        None => f.name.clone(),
        Some(p) => f
            .name
            .strip_prefix(p)
            .and_then(|r| r.strip_prefix('.'))
            .ok_or_else(|| format!("column '{}' is not under its parent '{p}'", f.name))?
            .to_string(),
    };
    // The field's own nullability (its column may hold nulls of an enclosing struct).
    let nullable = f.nullable && !f.metadata.iter().any(|(k, _)| k == REQUIRED_KEY);
    let wrong_type = |want: &ColumnType| {
        format!(
            "column '{}' stores a nested node as {:?}, expected {want:?}",
            f.name, f.ty
        )
    };
    let (written, stored, children, next) = match role {
        None | Some(Role::Leaf) => {
            if parent.is_some() != (role == Some(Role::Leaf)) {
                return Err(format!(
                    "column '{}': leaf role does not match its place in the schema",
                    f.name
                ));
            }
            let (w, s) = to_arrow_fields(f)?;
            (
                w.with_name(name.clone()).with_nullable(nullable),
                s.with_name(name.clone()).with_nullable(nullable),
                vec![],
                c + 1,
            )
        }
        Some(role) => {
            let want = role.column_type().unwrap_or(ColumnType::Bool);
            if f.ty != want {
                return Err(wrong_type(&want));
            }
            let mut children = Vec::with_capacity(role.children().min(fields.len()));
            let mut next = c + 1;
            for _ in 0..role.children() {
                children.push(next);
                next = build(
                    fields,
                    next,
                    Some(&f.name),
                    row_aligned && !role.repeats(),
                    depth + 1,
                    nodes,
                )?;
            }
            let pick = |w: bool| -> std::result::Result<Vec<FieldRef>, String> {
                children
                    .iter()
                    .map(|&k| {
                        let n = nodes[k]
                            .as_ref()
                            .ok_or("a nested column's child was not built")?;
                        Ok(Arc::clone(if w { &n.written } else { &n.stored }))
                    })
                    .collect()
            };
            let md: std::collections::HashMap<String, String> = f
                .metadata
                .iter()
                .filter(|(k, _)| k != NESTED_KEY && k != REQUIRED_KEY)
                .cloned()
                .collect();
            let make = |kids: Vec<FieldRef>| -> std::result::Result<Field, String> {
                let dt = match role {
                    Role::Struct(_) => DataType::Struct(Fields::from(kids)),
                    Role::List => DataType::List(kids[0].clone()),
                    Role::LargeList => DataType::LargeList(kids[0].clone()),
                    Role::FixedSizeList(n) => DataType::FixedSizeList(kids[0].clone(), n),
                    Role::Map(sorted) => {
                        if !matches!(kids[0].data_type(), DataType::Struct(kv) if kv.len() == 2) {
                            return Err(format!(
                                "column '{}': a map's entries must be a struct of two fields",
                                f.name
                            ));
                        }
                        DataType::Map(kids[0].clone(), sorted)
                    }
                    Role::Leaf => unreachable!("leaves handled above"),
                };
                Ok(Field::new(name.clone(), dt, nullable).with_metadata(md.clone()))
            };
            (make(pick(true)?)?, make(pick(false)?)?, children, next)
        }
    };
    nodes[c] = Some(Node {
        role,
        children,
        row_aligned,
        written: Arc::new(written),
        stored: Arc::new(stored),
    });
    Ok(next)
}

/// The element selection of a list: row selection `sel` (over `lengths.len()` rows)
/// spread over each selected row's elements. Uses the bit-parallel `extend` kernel
/// (PDEP with BMI2): one bit per non-empty row, deposited at its first element and
/// spread to the next row's first.
pub fn element_selection(sel: &Bitmap, lengths: &[usize]) -> Result<Bitmap> {
    let total: usize = lengths.iter().sum();
    let mut starts = Bitmap::zeros(total);
    let mut nonempty = Bitmap::zeros(lengths.len());
    let mut at = 0;
    for (i, &l) in lengths.iter().enumerate() {
        if l > 0 {
            starts.set(at, true);
            nonempty.set(i, true);
        }
        at += l;
    }
    let bits = sift_bits::levels::extract(sel, &nonempty)
        .map_err(|e| Error::Invalid(format!("element selection: {e}")))?;
    sift_bits::levels::extend(&bits, &starts)
        .map_err(|e| Error::Invalid(format!("element selection: {e}")))
}

/// Whether a footer column is known from its own field record to hold one value per row:
/// it is not part of a nested column (whose columns under a list hold one per element).
pub(crate) fn per_row(f: &StoredField) -> bool {
    !f.metadata.iter().any(|(k, _)| k == NESTED_KEY)
}

/// The scalar reference of [`element_selection`].
pub fn element_selection_reference(sel: &Bitmap, lengths: &[usize]) -> Bitmap {
    Bitmap::from_bools(
        lengths
            .iter()
            .enumerate()
            .flat_map(|(i, &l)| std::iter::repeat_n(sel.get(i), l)),
    )
}

/// The most values a column of list elements may hold in one block, from its stored bytes:
/// a decode budget's worth of 8-byte values (see `decode_budget`), at least 8Mi. Its
/// count comes from the lengths above it, not from the block's rows, so readers check it
/// before decoding and the writer refuses blocks beyond it.
pub(crate) fn max_elements(stored_bytes: usize) -> usize {
    sift_encoding::decode_budget(stored_bytes) / 8
}

/// Reads the footer columns of one nested column in one block, for [`assemble`].
pub(crate) trait ColumnReader {
    /// Column `c`'s `count` values at the rows of `sel` (all if `None`), as its stored
    /// type.
    fn read(&self, c: usize, count: usize, sel: Option<&Bitmap>) -> Result<ArrayRef>;
    /// The most values column `c` may hold in this block when they are list elements (its
    /// count then comes from the lengths above it): checked before any allocation sized by
    /// that count.
    fn max_elements(&self, c: usize) -> Result<usize>;
    /// An error about column `c`.
    fn error(&self, c: usize, msg: String) -> Error;
}

/// Assembles the subtree at footer column `c` from its `count` values, at the rows of
/// `sel` (all if `None`); `written`: dictionary leaves as dictionaries.
pub(crate) fn assemble(
    layout: &Layout,
    reader: &dyn ColumnReader,
    c: usize,
    count: usize,
    sel: Option<&Bitmap>,
    written: bool,
) -> Result<ArrayRef> {
    let node = &layout.nodes[c];
    let field = if written { &node.written } else { &node.stored };
    let Some(role) = node.role.filter(|r| *r != Role::Leaf) else {
        let a = reader.read(c, count, sel)?;
        if a.data_type() != field.data_type() {
            return Ok(arrow_cast::cast(&a, field.data_type())?);
        }
        return Ok(a);
    };
    // A list's lengths are read whole (the elements of a selected row start after those of
    // all rows before it); a presence column only at the selected rows.
    let lists = matches!(role, Role::List | Role::LargeList | Role::Map(_));
    let own = reader.read(c, count, if lists { None } else { sel })?;
    let rows = sel.map_or(count, Bitmap::count_ones);
    let nulls = own.logical_nulls().and_then(|n| {
        let n = match (lists, sel) {
            (true, Some(s)) => NullBuffer::new(BooleanBuffer::from_iter(
                s.iter_ones().map(|i| n.is_valid(i)),
            )),
            _ => n,
        };
        (n.null_count() > 0).then_some(n)
    });
    let kids: Vec<FieldRef> = match field.data_type() {
        DataType::Struct(f) => f.iter().cloned().collect(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => {
            vec![f.clone()]
        }
        other => return Err(reader.error(c, format!("nested node of type {other}"))),
    };
    Ok(match role {
        Role::Struct(_) => {
            let children = node
                .children
                .iter()
                .map(|&k| assemble(layout, reader, k, count, sel, written))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(
                StructArray::try_new_with_length(Fields::from(kids), children, nulls, rows)
                    .map_err(|e| reader.error(c, e.to_string()))?,
            )
        }
        Role::FixedSizeList(_) | Role::List | Role::LargeList | Role::Map(_) => {
            let lengths: Vec<usize> = match (role, own.data_type()) {
                (Role::FixedSizeList(n), _) => vec![n as usize; count],
                (_, DataType::Int32) => own
                    .as_primitive::<arrow_array::types::Int32Type>()
                    .iter()
                    .map(|v| usize::try_from(v.unwrap_or(0)).ok())
                    .collect::<Option<_>>()
                    .ok_or_else(|| reader.error(c, "a list length is negative".into()))?,
                _ => own
                    .as_primitive::<arrow_array::types::Int64Type>()
                    .iter()
                    .map(|v| usize::try_from(v.unwrap_or(0)).ok())
                    .collect::<Option<_>>()
                    .ok_or_else(|| reader.error(c, "a list length is negative".into()))?,
            };
            // Checked before anything is sized by it: the count comes from data.
            let limit = reader.max_elements(node.children[0])?;
            let elements = lengths
                .iter()
                .try_fold(0usize, |t, &l| t.checked_add(l).filter(|&t| t <= limit))
                .ok_or_else(|| {
                    reader.error(
                        c,
                        format!("the lists hold more elements than the {limit} their element column's stored bytes allow"),
                    )
                })?;
            let (esel, kept): (Option<Bitmap>, Vec<usize>) = match sel {
                None => (None, lengths),
                Some(s) => (
                    Some(element_selection(s, &lengths)?),
                    s.iter_ones().map(|i| lengths[i]).collect(),
                ),
            };
            let values = assemble(
                layout,
                reader,
                node.children[0],
                elements,
                esel.as_ref(),
                written,
            )?;
            let err = |e: arrow_schema::ArrowError| reader.error(c, e.to_string());
            let item = kids[0].clone();
            match role {
                Role::FixedSizeList(n) => {
                    Arc::new(FixedSizeListArray::try_new(item, n, values, nulls).map_err(err)?)
                        as ArrayRef
                }
                Role::List => Arc::new(
                    ListArray::try_new(item, OffsetBuffer::from_lengths(kept), values, nulls)
                        .map_err(err)?,
                ),
                Role::LargeList => Arc::new(
                    LargeListArray::try_new(item, OffsetBuffer::from_lengths(kept), values, nulls)
                        .map_err(err)?,
                ),
                Role::Map(sorted) => {
                    let entries = values.as_struct_opt().ok_or_else(|| {
                        reader.error(c, "a map's entries are not a struct".into())
                    })?;
                    Arc::new(
                        MapArray::try_new(
                            item,
                            OffsetBuffer::from_lengths(kept),
                            entries.clone(),
                            nulls,
                            sorted,
                        )
                        .map_err(err)?,
                    )
                }
                Role::Struct(_) | Role::Leaf => unreachable!("list roles"),
            }
        }
        Role::Leaf => unreachable!("leaves handled above"),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn element_selection_equals_the_reference(
            rows in proptest::collection::vec((0usize..5, any::<bool>()), 0..300)
        ) {
            let lengths: Vec<usize> = rows.iter().map(|r| r.0).collect();
            let sel = Bitmap::from_bools(rows.iter().map(|r| r.1));
            prop_assert_eq!(
                element_selection(&sel, &lengths).unwrap(),
                element_selection_reference(&sel, &lengths)
            );
        }
    }
}
