//! [`ZarrLogicalCodec`] and [`ZarrPhysicalCodec`]: DataFusion's extension codecs for
//! [`ZarrTable`] and [`ZarrScanExec`], each wrapping another codec (Ballista's by default)
//! that handles every other node.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::common::{Result as DFResult, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalExprNode;
use prost::Message;

use super::wire::{self, FilterWire, SCAN_TAG, ScanWire, TABLE_TAG, TableWire};
use crate::error::{Result, ZarrError};
use crate::factory::open_blocking;
use crate::provider::ZarrTable;
use crate::scan::{
    ChunkSelection, DecodedFilter, FileScanParts, RawFilter, ScanFilter, ScanParts, ZarrScanExec,
    file_scan_parts,
};

/// The logical codec: carries a [`ZarrTable`] as its store URL and options, and hands every
/// other node to the codec it wraps. Set it on the client, the scheduler and the executors.
///
/// ```
/// use datafusion_zarr::distributed::ZarrLogicalCodec;
/// use ballista_core::extension::SessionConfigExt;
/// use std::sync::Arc;
///
/// let config = datafusion::prelude::SessionConfig::new_with_ballista()
///     .with_ballista_logical_extension_codec(Arc::new(ZarrLogicalCodec::default()));
/// ```
#[derive(Debug)]
pub struct ZarrLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl ZarrLogicalCodec {
    /// A codec that hands the nodes it does not know to `inner`.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

/// Wraps Ballista's logical codec.
impl Default for ZarrLogicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(BallistaLogicalExtensionCodec::default()))
    }
}

/// The opened table `payload` describes, checked against the schema the plan was made with.
fn open_table(
    payload: &TableWire,
    table_ref: &TableReference,
    schema: &SchemaRef,
    ctx: &TaskContext,
) -> Result<ZarrTable> {
    let options = payload.options()?;
    let table = open_blocking(ctx.runtime_env(), payload.location.clone(), options)?;
    if table.schema() != *schema {
        return Err(ZarrError::metadata(
            table.model().display.as_str(),
            format!(
                "table {table_ref} no longer has the schema the query was planned with (the store changed?): planned {schema:?}, found {:?}",
                table.schema()
            ),
        ));
    }
    Ok(table.for_cluster())
}

impl LogicalExtensionCodec for ZarrLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DFResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DFResult<Arc<dyn TableProvider>> {
        match wire::read::<TableWire>(TABLE_TAG, buf) {
            Some(payload) => Ok(Arc::new(open_table(&payload?, table_ref, &schema, ctx)?)),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DFResult<()> {
        match node.downcast_ref::<ZarrTable>() {
            Some(table) => Ok(wire::write(TABLE_TAG, &TableWire::of(table.model()), buf)?),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DFResult<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DFResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}

/// The physical codec: carries the scan of a table from a cluster plan (a `DataSourceExec`
/// reading the partitions of a planned [`ZarrScanExec`], see `ZarrTable::for_cluster`) as its
/// table, partitions, pruning result, UTF-32 filters and the partitions of each file group
/// (which Ballista narrows to a task's own), and hands every other node to the codec it wraps.
/// Dynamic filters never travel: they only prune, and their updates could not follow the plan.
#[derive(Debug)]
pub struct ZarrPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl ZarrPhysicalCodec {
    /// A codec that hands the nodes it does not know to `inner`.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { inner }
    }

    fn encode_scan(
        &self,
        scan: &ZarrScanExec,
        groups: Vec<Vec<usize>>,
        fetch: Option<usize>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<ScanWire> {
        let parts = scan.parts();
        // The UTF-32 filters, then the decoded ones: each is parsed again where it arrives, as
        // a UTF-32 filter if it is one (as where it was planned), else as a decoded one.
        let shown = (parts.raw_filters.iter().map(|f| (f.expr(), f.to_string()))).chain(
            parts
                .decoded_filters
                .iter()
                .map(|f| (f.expr(), f.to_string())),
        );
        let mut filters = Vec::new();
        for (expr, display) in shown {
            let expr = proto_converter.physical_expr_to_proto(expr, self)?;
            filters.push(FilterWire {
                expr: expr.encode_to_vec(),
                display,
            });
        }
        Ok(ScanWire {
            table: TableWire::of(scan.model()),
            projection: parts.projection,
            partitions: parts.partitions.iter().map(|p| wire::pairs(p)).collect(),
            selected: wire::pairs(&parts.selection.runs),
            total: parts.selection.total,
            pruning_predicate: parts.selection.predicate,
            filters,
            partition_rows: parts.partition_rows,
            total_rows: parts.total_rows,
            limit: parts.limit,
            groups,
            fetch,
        })
    }

    fn decode_scan(
        &self,
        payload: ScanWire,
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let options = payload.table.options()?;
        let table = open_blocking(ctx.runtime_env(), payload.table.location.clone(), options)?;
        let model = table.model().clone();
        let decode = PhysicalPlanDecodeContext::new(ctx, self);
        let mut raw_filters = Vec::with_capacity(payload.filters.len());
        let mut decoded_filters = Vec::new();
        for filter in payload.filters {
            let node = PhysicalExprNode::decode(filter.expr.as_slice()).map_err(|e| {
                ZarrError::internal(format!(
                    "reading a filter of the scan of {}: {e}",
                    model.display
                ))
            })?;
            let expr = proto_converter.proto_to_physical_expr(&node, &model.schema, &decode)?;
            let scan_filter = ScanFilter::from_physical(expr);
            if let Some(raw) = RawFilter::parse(&model, &scan_filter) {
                raw_filters.push(raw.shown_as(filter.display));
                continue;
            }
            let decoded = DecodedFilter::parse(&model, &scan_filter).ok_or_else(|| {
                ZarrError::internal(format!(
                    "the filter {} of the scan of {} is not a filter this table's scan \
                     evaluates",
                    filter.display, model.display
                ))
            })?;
            decoded_filters.push(decoded.shown_as(filter.display));
        }
        let parts = ScanParts {
            projection: payload.projection,
            partitions: payload.partitions.iter().map(|p| wire::runs(p)).collect(),
            selection: ChunkSelection {
                runs: wire::runs(&payload.selected),
                total: payload.total,
                predicate: payload.pruning_predicate,
            },
            raw_filters,
            decoded_filters,
            partition_rows: payload.partition_rows,
            total_rows: payload.total_rows,
            limit: payload.limit,
        };
        let scan = Arc::new(ZarrScanExec::from_parts(model, parts)?);
        Ok(scan.file_scan(Some(payload.groups), payload.fetch)?)
    }
}

/// Wraps Ballista's physical codec.
impl Default for ZarrPhysicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(BallistaPhysicalExtensionCodec::default()))
    }
}

impl PhysicalExtensionCodec for ZarrPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match wire::read::<ScanWire>(SCAN_TAG, buf) {
            Some(payload) => self.decode_scan(payload?, ctx, proto_converter),
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<()> {
        match file_scan_parts(node.as_ref()) {
            Some(FileScanParts {
                scan,
                groups,
                fetch,
            }) => {
                let payload = self.encode_scan(&scan, groups, fetch, proto_converter)?;
                Ok(wire::write(SCAN_TAG, &payload, buf)?)
            }
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}
