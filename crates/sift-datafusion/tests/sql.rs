//! SQL over Sift and Parquet files through `SiftTable`, checked against DataFusion's own
//! evaluation of the same queries over the same rows held in memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array,
    Int64Array, RecordBatch, StringArray, UInt32Array,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::prelude::SessionContext;
use sift_datafusion::{SiftTable, scan_counters, session, summed_scan_counters};
use sift_format::{SiftWriter, WriteOptions};

const ROWS: usize = 10_000;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int32, true),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("d", DataType::Date32, true),
        Field::new("p", DataType::Decimal128(15, 2), true),
        Field::new("b", DataType::Boolean, true),
    ]))
}

/// Rows with nulls, repeats (dictionaries), runs, negative and zero floats.
fn batch() -> RecordBatch {
    let n = ROWS as i64;
    let id = Int64Array::from_iter_values(0..n);
    let k = Int32Array::from_iter((0..n).map(|i| (i % 13 != 0).then_some((i % 50) as i32)));
    let x = Float64Array::from_iter((0..n).map(|i| match i % 97 {
        0 => None,
        1 => Some(-0.0),
        2 => Some(0.0),
        _ => Some(((i * 7919) % 1000) as f64 / 8.0 - 40.0),
    }));
    let words = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"];
    let s = StringArray::from_iter(
        (0..n).map(|i| (i % 11 != 5).then(|| format!("{}-{}", words[(i % 7) as usize], i % 40))),
    );
    let d = Date32Array::from_iter((0..n).map(|i| (i % 17 != 3).then_some(8000 + (i / 7) as i32)));
    let p = Decimal128Array::from_iter(
        (0..n).map(|i| (i % 19 != 0).then_some((i * 37) as i128 % 100_000)),
    )
    .with_precision_and_scale(15, 2)
    .expect("decimal type");
    let b = BooleanArray::from_iter((0..n).map(|i| (i % 23 != 0).then_some(i % 3 == 0)));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id),
        Arc::new(k),
        Arc::new(x),
        Arc::new(s),
        Arc::new(d),
        Arc::new(p),
        Arc::new(b),
    ];
    RecordBatch::try_new(schema(), columns).expect("batch")
}

fn write_sift(path: &Path, batch: &RecordBatch, block_rows: usize) {
    let mut w = SiftWriter::create(
        path,
        batch.schema(),
        WriteOptions {
            block_rows,
            ..Default::default()
        },
    )
    .expect("create sift");
    w.write(batch).expect("write sift");
    w.finish().expect("finish sift");
}

/// `batch` as table `name` of `ctx` (a Sift file in `dir`, blocks of `block_rows`) and of
/// `reference` (in memory).
/// Registers `batch` as the in-memory table `name` of `reference`, the DataFusion the
/// queries on Sift's tables are checked against.
fn register_in_memory(reference: &SessionContext, name: &str, batch: &RecordBatch) {
    let mem = MemTable::try_new(batch.schema(), vec![vec![batch.clone()]]).expect("mem");
    reference
        .register_table(name, Arc::new(mem))
        .expect("register");
}

fn register_both(
    ctx: &SessionContext,
    reference: &SessionContext,
    dir: &Path,
    name: &str,
    batch: &RecordBatch,
    block_rows: usize,
) {
    let path = dir.join(format!("{name}.sift"));
    write_sift(&path, batch, block_rows);
    let table = SiftTable::open(&path.to_string_lossy()).expect("open");
    ctx.register_table(name, Arc::new(table)).expect("register");
    register_in_memory(reference, name, batch);
}

/// A one-thread session with the hash joins' own dynamic filters off (so that the scans'
/// counters show the join filters alone), and a DataFusion reference, both holding
/// `tables` (the session's as Sift files in `dir`).
async fn join_filter_sessions(
    dir: &Path,
    tables: &[(&str, &RecordBatch)],
) -> (SessionContext, SessionContext) {
    let (ctx, reference) = (session(1), SessionContext::new());
    ctx.sql("set datafusion.optimizer.enable_join_dynamic_filter_pushdown = false")
        .await
        .expect("set");
    for &(name, batch) in tables {
        register_both(&ctx, &reference, dir, name, batch, 10_000);
    }
    (ctx, reference)
}

/// `id` 0..n and `k` = id % `modulo`.
fn id_k_batch(n: i64, modulo: i64) -> RecordBatch {
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "k",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| (i % modulo) as i32),
            )),
        ),
    ])
    .expect("id and k")
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(2_500))
        .build();
    write_parquet_with(path, batch, props);
}

fn write_parquet_with(
    path: &Path,
    batch: &RecordBatch,
    props: parquet::file::properties::WriterProperties,
) {
    let file = std::fs::File::create(path).expect("create parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props))
        .expect("parquet writer");
    w.write(batch).expect("write parquet");
    w.close().expect("close parquet");
}

struct Files {
    _dir: tempfile::TempDir,
    sift: PathBuf,
    parquet: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().expect("tempdir");
    let sift = dir.path().join("t.sift");
    let parquet = dir.path().join("t.parquet");
    let b = batch();
    write_sift(&sift, &b, 1_500);
    write_parquet(&parquet, &b);
    Files {
        _dir: dir,
        sift,
        parquet,
    }
}

/// DataFusion on [`batch`] in memory, as `t`: the reference the queries are checked
/// against.
fn reference() -> SessionContext {
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &batch());
    reference
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime")
}

/// The query's rows, sorted, as text (so partition order does not matter).
async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    sorted_rows(&batches)
}

/// The rows of `batches`, sorted, as text.
fn sorted_rows(batches: &[RecordBatch]) -> String {
    let text = pretty_format_batches(batches).expect("format").to_string();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// The query's rows in the order it returns them, as text.
async fn ordered_rows(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<String> {
    let batches = ctx.sql(sql).await?.collect().await?;
    Ok(pretty_format_batches(&batches)?.to_string())
}

async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan")
}

/// The physical plan of `sql`, run to the end (so that its scans' counters are filled
/// in), and its text.
async fn executed_plan(ctx: &SessionContext, sql: &str) -> (Arc<dyn ExecutionPlan>, String) {
    let plan = physical_plan(ctx, sql).await;
    datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .expect("run");
    let text = displayable(plan.as_ref()).indent(true).to_string();
    (plan, text)
}

const QUERIES: &[&str] = &[
    "select count(*) from t",
    "select * from t where id < 30 or id between 9990 and 9999",
    "select id, k from t where k = 7 and id > 5000",
    "select count(*), sum(k) from t where k in (1, 2, 3, 49) and s like 'b%'",
    "select count(*) from t where k not in (1, 2, 3) and s not like '%-1%'",
    "select count(*) from t where k is null or s is null",
    "select count(*) from t where x > 10.5 and x <= 50",
    "select count(*) from t where x > 0",
    "select count(*) from t where x = 0 or x < -39",
    "select count(*) from t where d >= date '1992-01-01' and d < date '1992-06-01'",
    "select count(*), sum(p) from t where p between 100.00 and 250.50",
    "select count(*) from t where p > 999.99 or p < 0.05",
    "select count(*) from t where b",
    "select count(*) from t where not b",
    "select count(*) from t where starts_with(s, 'fig-1')",
    "select count(*) from t where s = 'apple-7' or s > 'grape-3'",
    "select count(*) from t where k < id",
    "select count(*) from t where k + 1 = 8",
    "select s, count(*), min(x), max(p) from t where k < 10 group by s",
    "select id, s from t where k = 3 order by id desc limit 5",
    "select a.id, b.id from t a join t b on a.id = b.k where a.id < 20 and b.id < 200",
    "select id from t where s like 'c_erry-%' and not (k is null)",
];

#[test]
fn queries_equal_datafusion_on_the_same_rows() {
    let f = files();
    let rt = runtime();
    rt.block_on(async {
        let reference = reference();
        for path in [&f.sift, &f.parquet] {
            for threads in [1, 3] {
                let ctx = session(threads);
                let table = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table("t", Arc::new(table)).expect("register");
                for q in QUERIES {
                    assert_eq!(
                        rows(&ctx, q).await,
                        rows(&reference, q).await,
                        "{q} on {} with {threads} threads",
                        path.display()
                    );
                }
            }
        }
    });
}

/// Float and narrow integer columns compared with constants of a wider type (DataFusion
/// casts the column: `CAST(g AS Float64) < 0.1`) are filtered inside the scan, with no
/// filter above it, and give DataFusion's rows; on a Sift file and on Parquet (pages read
/// in place: a float dictionary, PLAIN floats, unsigned integers).
#[test]
fn columns_cast_to_a_wider_type_are_filtered_in_the_scan() {
    let n = 6_000i64;
    let batch = RecordBatch::try_from_iter([
        (
            "g",
            Arc::new(Float32Array::from_iter((0..n).map(|i| {
                (i % 31 != 0).then_some(match i % 7 {
                    0 => (i % 40) as f32 / 8.0 - 2.0,
                    1 => -0.0,
                    _ => ((i * 7919) % 10_000) as f32 / 997.0 - 3.0,
                })
            }))) as ArrayRef,
        ),
        (
            "j",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| (i * 2_654_435_761i64 % (1 << 32) - (1 << 31)) as i32),
            )),
        ),
        (
            "u",
            Arc::new(UInt32Array::from_iter_values(
                (0..n).map(|i| (i * 2_654_435_761i64 % (1 << 32)) as u32),
            )),
        ),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let parquet = dir.path().join("g.parquet");
    write_parquet(&parquet, &batch);
    let sift = dir.path().join("g.sift");
    write_sift(&sift, &batch, 2_000);
    let queries = [
        "select count(*), min(g), max(g) from t where g < 0.1",
        "select count(*) from t where g between -1.3 and 2.7 or g > 6.9",
        "select count(*), sum(j) from t where g in (0.5, -1.25, 1.3)",
        "select count(*) from t where j > 2147483647.5 or j < -3000000000 or j >= 2000000000",
        "select count(*), max(u) from t where u > 4000000000 or u < 5000.5",
    ];
    runtime().block_on(async {
        let reference = SessionContext::new();
        register_in_memory(&reference, "t", &batch);
        for path in [&sift, &parquet] {
            let ctx = session(1);
            let table = SiftTable::open(&path.to_string_lossy()).expect("open");
            ctx.register_table("t", Arc::new(table)).expect("register");
            for q in queries {
                assert_eq!(
                    rows(&ctx, q).await,
                    rows(&reference, q).await,
                    "{q} on {path:?}"
                );
                let plan = physical_plan(&ctx, q).await;
                let text = displayable(plan.as_ref()).indent(true).to_string();
                assert!(!text.contains("FilterExec"), "{q}: {text}");
            }
        }
    });
}

/// Aggregates over the scan, and whether `SiftAggregate` computes their first phase.
const AGGREGATES: &[(&str, bool)] = &[
    (
        "select s, count(*), count(k), sum(k), avg(k), min(k), max(k), sum(p), avg(p), \
         min(p), max(p), count(x), count(b) from t group by s",
        true,
    ),
    (
        "select sum(p * (1 - p)), sum(p + k), sum(k * 3 - id), sum(p * 2), sum(x), avg(x), \
         sum(x * 2.5 + 1.0), avg(k) from t where k < 40",
        true,
    ),
    (
        "select k, sum(p * 2), avg(p), count(*) from t group by k",
        true,
    ),
    (
        "select d, count(*), max(id), min(p) from t where id > 100 group by d",
        true,
    ),
    (
        "select s, k, sum(p), count(*) from t where s like 'a%' or k is null group by s, k",
        true,
    ),
    (
        "select count(*), sum(p), avg(x), min(k) from t where id < 0",
        true,
    ),
    ("select s, sum(p) from t where id < 0 group by s", true),
    // Averages of groups whose every value is null: null, not 0 / 0.
    (
        "select s, count(*), avg(k), avg(p) from t where k is null group by s",
        true,
    ),
    (
        "select s, avg(x), avg(k) from t where x is null group by s",
        true,
    ),
    // Extremes over nulls (their slots decode as 0, below every valid value here), in one
    // group and in many.
    (
        "select min(k), max(k), count(k), min(d) from t where k is null or k > 5",
        true,
    ),
    (
        "select s, min(k), max(k) from t where k is null or k > 5 group by s",
        true,
    ),
    // Extremes of a column without nulls in many groups (each group's extreme of a batch
    // taken first).
    (
        "select s, min(id), max(id), count(*) from t group by s",
        true,
    ),
    ("select sum(id * id * id) from t", true),
    // Literals of one unscaled value at two scales.
    (
        "select sum(p * 1 + p * cast(0.01 as decimal(3, 2))), \
         sum(p - cast(0.01 as decimal(3, 2))) from t",
        true,
    ),
    // DataFusion plans it as a GROUP BY k below a count, and that grouping is taken over.
    ("select count(distinct k) from t", true),
    // Ten thousand groups.
    (
        "select id, count(*), sum(p) from t group by id having count(*) > 1 or id < 5",
        true,
    ),
    // Not taken over: values beyond 64 bits, division, a 256-bit state, a float extreme,
    // group keys that are not columns, or doubles.
    ("select sum(id * id * id * id * id) from t", false),
    ("select sum(p / 3) from t", false),
    // A 256-bit state (the average of a product's wider decimal).
    ("select avg(p * 2) from t", false),
    ("select max(x) from t", false),
    ("select id % 3, count(*) from t group by id % 3", false),
    ("select x, count(*) from t group by x", false),
];

/// Ungrouped `MIN` and `MAX` of columns, alone or beside `COUNT(*)`: the scan returns
/// each block's extremes (`extremes_only`) instead of its rows, and its selected rows
/// counted where a `COUNT(*)` asks (`count_selected`). With nulls, no selected row, only
/// null values selected, no filter, and integers, dates and decimals.
const EXTREMES: &[&str] = &[
    "select min(k), max(k), min(d), max(p), min(id) from t where k is null or k > 5",
    "select max(k), min(p), max(d) from t where s like 'a%'",
    // A filter every block's bounds prove (an unfiltered query is answered by DataFusion
    // from the exact statistics, without a scan).
    "select min(id), max(d), min(k) from t where id >= 0",
    "select max(k), min(d) from t where id < 0",
    "select min(k), max(k) from t where k is null",
    "select max(d), min(k), max(k) from t where id between 100 and 2600 and k < 9",
    "select count(*), min(k), max(d) from t where id between 100 and 2600 and k < 9",
    "select max(k), count(*) from t where id < 0",
    "select count(*), min(k), max(k) from t where k is null",
    "select count(1), min(id), count(*), max(p) from t where s like 'a%' or k > 5",
    "select count(*), min(id), max(id) from t where id >= 0",
];

#[test]
fn aggregates_next_to_the_scan_equal_datafusion() {
    let f = files();
    runtime().block_on(async {
        let reference = reference();
        for path in [&f.sift, &f.parquet] {
            for threads in [1, 3] {
                let ctx = session(threads);
                let table = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table("t", Arc::new(table)).expect("register");
                for &(q, pushed) in AGGREGATES {
                    let plan = physical_plan(&ctx, q).await;
                    let text = displayable(plan.as_ref()).indent(true).to_string();
                    assert_eq!(
                        text.contains("SiftAggregate"),
                        pushed,
                        "{q} on {}:\n{text}",
                        path.display()
                    );
                    assert_eq!(
                        rows(&ctx, q).await,
                        rows(&reference, q).await,
                        "{q} on {} with {threads} threads",
                        path.display()
                    );
                }
                for q in EXTREMES {
                    let plan = physical_plan(&ctx, q).await;
                    let text = displayable(plan.as_ref()).indent(true).to_string();
                    assert!(text.contains("extremes_only"), "{q}:\n{text}");
                    assert_eq!(
                        text.contains("count_selected"),
                        q.contains("count("),
                        "{q}:\n{text}"
                    );
                    assert_eq!(
                        rows(&ctx, q).await,
                        rows(&reference, q).await,
                        "{q} on {} with {threads} threads",
                        path.display()
                    );
                }
                // Extremes have a switch of their own: the aggregate then takes the rows.
                let set = |sql: &'static str| {
                    let ctx = &ctx;
                    async move {
                        ctx.sql(sql)
                            .await
                            .expect("set")
                            .collect()
                            .await
                            .expect("set")
                    }
                };
                set("set sift.scan_extremes = false").await;
                let q = EXTREMES[0];
                let text = displayable(physical_plan(&ctx, q).await.as_ref())
                    .indent(true)
                    .to_string();
                assert!(
                    text.contains("SiftAggregate") && !text.contains("extremes_only"),
                    "{text}"
                );
                assert_eq!(rows(&ctx, q).await, rows(&reference, q).await, "{q}");
                // The switch turns it off.
                set("set sift.scan_aggregates = false").await;
                let (q, _) = AGGREGATES[0];
                let plan = physical_plan(&ctx, q).await;
                let text = displayable(plan.as_ref()).indent(true).to_string();
                assert!(!text.contains("SiftAggregate"), "{text}");
                assert_eq!(rows(&ctx, q).await, rows(&reference, q).await, "{q}");
            }
        }
    });
}

#[test]
fn exact_filters_leave_no_filter_above_the_scan() {
    let f = files();
    runtime().block_on(async {
        let ctx = session(2);
        ctx.register_table(
            "t",
            Arc::new(SiftTable::open(&f.sift.to_string_lossy()).expect("open")),
        )
        .expect("register");
        let plan = physical_plan(
            &ctx,
            "select sum(x) from t where d >= date '1992-01-01' and k < 24 and s like 'a%'",
        )
        .await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(!text.contains("FilterExec"), "{text}");
        let scan = text
            .lines()
            .find(|l| l.contains("SiftScan"))
            .unwrap_or_else(|| panic!("no SiftScan in {text}"));
        assert!(scan.contains("d >= date '1992-01-01'"), "{scan}");
        assert!(scan.contains("k < 24"), "{scan}");
        assert!(scan.contains("s like 'a%'"), "{scan}");
        assert!(scan.contains("partitions=2"), "{scan}");
        // What Sift cannot evaluate exactly stays with DataFusion, above the scan.
        let plan = physical_plan(&ctx, "select id from t where k + 1 = 8 and id < 100").await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(text.contains("FilterExec"), "{text}");
        let scan = text.lines().find(|l| l.contains("SiftScan")).expect("scan");
        assert!(scan.contains("id < 100"), "{scan}");
        assert!(!scan.contains("k + 1"), "{scan}");
    });
}

#[test]
fn pushed_filters_prune_blocks() {
    let f = files();
    runtime().block_on(async {
        let ctx = session(1);
        ctx.register_table(
            "t",
            Arc::new(SiftTable::open(&f.sift.to_string_lossy()).expect("open")),
        )
        .expect("register");
        let (plan, text) = executed_plan(&ctx, "select count(*) from t where id >= 9000").await;
        let metrics = summed_scan_counters(&plan);
        // 10,000 rows in blocks of 1,500: the 6 blocks before row 9,000 are pruned.
        assert_eq!(metrics.get("blocks"), Some(&7), "{text} {metrics:?}");
        assert_eq!(metrics.get("blocks_pruned"), Some(&6), "{text} {metrics:?}");
        assert_eq!(
            metrics.get("rows_matched"),
            Some(&1000),
            "{text} {metrics:?}"
        );
    });
}

#[test]
fn statistics_come_from_the_footer() {
    let f = files();
    let table = SiftTable::open(&f.sift.to_string_lossy()).expect("open");
    let stats = datafusion::catalog::TableProvider::statistics(&table).expect("statistics");
    use datafusion::common::ScalarValue;
    use datafusion::common::stats::Precision;
    assert_eq!(stats.num_rows, Precision::Exact(ROWS));
    let id = &stats.column_statistics[0];
    assert_eq!(id.null_count, Precision::Exact(0));
    // The writer records an integer chunk's exact extremes.
    assert_eq!(id.min_value, Precision::Exact(ScalarValue::Int64(Some(0))));
    assert_eq!(
        id.max_value,
        Precision::Exact(ScalarValue::Int64(Some(ROWS as i64 - 1)))
    );
    // A float's or a string's bounds may only enclose the values.
    for c in [2, 3] {
        let s = &stats.column_statistics[c];
        assert!(!s.max_value.is_exact().unwrap_or(false), "{c}: {s:?}");
    }
    let k_nulls = (0..ROWS).filter(|i| i % 13 == 0).count();
    assert_eq!(
        stats.column_statistics[1].null_count,
        Precision::Exact(k_nulls)
    );
}

/// Unfiltered `COUNT`, `MIN` and `MAX` of integer, date and decimal columns are answered
/// by DataFusion from the exact statistics, with no scan in the plan, on a Sift file and
/// on a Parquet file (arrow-rs writes exact integer bounds); a float's `MAX`, or a
/// filter, still scans. Every answer equals DataFusion's over the rows themselves.
#[test]
fn unfiltered_extremes_and_counts_come_from_exact_statistics() {
    let f = files();
    let rt = runtime();
    rt.block_on(async {
        let reference = reference();
        let cases = [
            (
                "select count(*), count(k), min(id), max(id), min(k), max(k), min(d), \
                 max(d), min(p), max(p) from t",
                false,
            ),
            ("select max(x), min(k) from t", true),
            ("select count(*), max(k) from t where id > 5000", true),
        ];
        for path in [&f.sift, &f.parquet] {
            let ctx = session(1);
            let table = SiftTable::open(&path.to_string_lossy()).expect("open");
            ctx.register_table("t", Arc::new(table)).expect("register");
            for (q, scans) in cases {
                let what = format!("{q} on {}", path.display());
                assert_eq!(rows(&ctx, q).await, rows(&reference, q).await, "{what}");
                let plan = physical_plan(&ctx, q).await;
                let text = displayable(plan.as_ref()).indent(true).to_string();
                assert_eq!(text.contains("SiftScan"), scans, "{what}:\n{text}");
            }
        }
    });
}

/// A scan with a pushed filter reports the rows the filter is estimated to keep, as
/// DataFusion's own `FilterExec` would (interval analysis on the zone maps' bounds, else the
/// default selectivity), so that a join is built on the side a filter makes small.
#[test]
fn filtered_scans_estimate_their_rows() {
    use datafusion::common::stats::Precision;
    use datafusion::physical_plan::StatisticsArgs;
    use datafusion::physical_plan::statistics::StatisticsContext;
    let f = files();
    runtime().block_on(async {
        let ctx = session(1);
        let open = || Arc::new(SiftTable::open(&f.sift.to_string_lossy()).expect("open"));
        ctx.register_table("t", open()).expect("register");
        ctx.register_table("u", open()).expect("register");
        // (query, estimated rows): `id` spans 0..10,000; a filter on strings has no
        // interval, so DataFusion's default of 20 % applies.
        for (sql, want) in [
            ("select id from t", Precision::Exact(ROWS)),
            ("select id from t where id < 1000", Precision::Inexact(1000)),
            (
                "select id from t where s like '%7%'",
                Precision::Inexact(ROWS / 5),
            ),
        ] {
            let plan = physical_plan(&ctx, sql).await;
            let stats = StatisticsContext::new()
                .compute(plan.as_ref(), &StatisticsArgs::new())
                .expect("statistics");
            assert_eq!(stats.num_rows, want, "{sql}");
        }
        // Both sides hold the same file; the filtered one is built on.
        let sql = "select count(*) from t join u on t.id = u.id where u.id < 500";
        let text = displayable(physical_plan(&ctx, sql).await.as_ref())
            .indent(true)
            .to_string();
        let build = text
            .lines()
            .find(|l| l.contains("SiftScan"))
            .unwrap_or_default();
        assert!(build.contains("filter=["), "{text}");
        assert_eq!(
            rows(&ctx, sql).await,
            rows(&ctx, "select 500 as \"count(*)\"").await
        );
    });
}

#[test]
fn files_in_from_and_external_tables() {
    let f = files();
    let dir = f.sift.parent().expect("dir").to_path_buf();
    // A second Sift file of the same schema for the directory and the glob.
    write_sift(&dir.join("u.sift"), &batch().slice(0, 100), 64);
    runtime().block_on(async {
        let ctx = session(2);
        let count = |sql: String| {
            let ctx = ctx.clone();
            async move { rows(&ctx, &sql).await }
        };
        let one = count(format!("select count(*) as n from '{}'", f.sift.display())).await;
        assert!(one.contains("| 10000 |"), "{one}");
        let glob = count(format!(
            "select count(*) as n from '{}/*.sift'",
            dir.display()
        ))
        .await;
        assert!(glob.contains("| 10100 |"), "{glob}");
        let parquet = count(format!(
            "select count(*) as n from '{}'",
            f.parquet.display()
        ))
        .await;
        assert!(parquet.contains("| 10000 |"), "{parquet}");
        ctx.sql(&format!(
            "create external table ext stored as sift location '{}/'",
            dir.display()
        ))
        .await
        .expect("create external table");
        let ext = count("select count(*) as n from ext where id < 100".into()).await;
        assert!(ext.contains("| 200 |"), "{ext}");
    });
}

#[test]
fn bad_tables_are_clear_errors() {
    let f = files();
    let dir = f.sift.parent().expect("dir").to_path_buf();
    let missing = SiftTable::open("/no/such/file.sift").expect_err("missing file");
    assert!(
        missing.to_string().contains("/no/such/file.sift"),
        "{missing}"
    );
    // A file in the same directory whose column `id` has another type.
    let other = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)])),
        vec![Arc::new(StringArray::from(vec!["1", "2"]))],
    )
    .expect("batch");
    write_sift(&dir.join("v.sift"), &other, 64);
    let mixed = SiftTable::open(&format!("{}/*.sift", dir.display())).expect_err("mixed schemas");
    let text = mixed.to_string();
    assert!(text.contains("t.sift") && text.contains("v.sift"), "{text}");
    assert!(
        text.contains("column 'id' is Int64 in one and Utf8"),
        "{text}"
    );
    let damaged = dir.join("damaged.sift");
    std::fs::write(&damaged, b"not a sift file at all").expect("write");
    let e = SiftTable::open(&damaged.to_string_lossy()).expect_err("damaged");
    assert!(e.to_string().contains("damaged.sift"), "{e}");
}

/// Dynamic filters reach the scan: a hash join's build-side key bounds and a TopK's
/// threshold prune blocks of the probed table, and the results stay right.
#[test]
fn dynamic_filters_prune_blocks() {
    let f = files();
    runtime().block_on(async {
        let ctx = session(1);
        let open = || Arc::new(SiftTable::open(&f.sift.to_string_lossy()).expect("open"));
        ctx.register_table("t", open()).expect("register");
        let reference = reference();
        for sql in [
            "select count(*), sum(a.k) from t a join (select id from t where id between 9100 and 9120) b on a.id = b.id",
            // On `d`: the scan is known sorted on `id`, which needs no TopK.
            "select d, id from t order by d, id limit 3",
        ] {
            assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await, "{sql}");
            let (plan, text) = executed_plan(&ctx, sql).await;
            let scans = scan_counters(&plan);
            let probed = scans
                .iter()
                .find(|m| m.get("dynamic_filters").is_some_and(|&n| n > 0))
                .unwrap_or_else(|| panic!("no scan took a dynamic filter: {sql}\n{text}\n{scans:?}"));
            // 7 blocks of 1,500 rows: the keys (or the first rows) lie in one or two.
            assert!(
                probed.get("blocks_pruned").is_some_and(|&n| n >= 5),
                "{sql}\n{text}\n{scans:?}"
            );
        }
    });
}

/// A dimension table for the fact table `t`: `fid` points at `t.id` (every fifth id, so a
/// selective category holds more keys than an exact list), `dk` at `t.k`, `ds` at `t.s`;
/// `nk` is null wherever `cat = 'n'`.
fn dim_batch() -> RecordBatch {
    let n = 2_000i64;
    let cats = ["a", "b", "c", "n"];
    let words = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"];
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "fid",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 5))),
        ),
        (
            "dk",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| (i % 60) as i32),
            )),
        ),
        (
            "ds",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("{}-{}", words[(i % 7) as usize], i % 40)),
            )),
        ),
        (
            "nk",
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| (i % 4 != 3).then_some(i * 5)),
            )),
        ),
        (
            "cat",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| cats[(i % 4) as usize]),
            )),
        ),
    ];
    RecordBatch::try_from_iter(columns).expect("dim batch")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Jf {
    /// No join filter in the plan.
    None,
    /// A join filter in the plan.
    Planned,
    /// A join filter in the plan, and it dropped rows in a running scan.
    Used,
}

/// Joins whose filtered side sends its keys into the other side's scan: equal results
/// with join filters on and off, on Sift and Parquet files, to DataFusion's in memory;
/// with them on, the listed queries read fewer rows into the join.
#[test]
fn join_filters_keep_results_and_drop_rows() {
    let f = files();
    let dim_sift = f.sift.with_file_name("dim.sift");
    let dim_parquet = f.sift.with_file_name("dim.parquet");
    write_sift(&dim_sift, &dim_batch(), 700);
    write_parquet(&dim_parquet, &dim_batch());
    // (query, whether a join filter must be planned and reach a running scan: the probe
    // side of a join whose build side is empty never runs)
    let queries: &[(&str, Jf)] = &[
        // Bloom filter on integers (500 keys), on strings, and an exact IN list (15 keys).
        (
            "select count(*), sum(t.k) from t join dim on t.id = dim.fid where dim.cat = 'a'",
            Jf::Used,
        ),
        (
            "select count(*) from t join dim on t.s = dim.ds where dim.cat = 'b' and dim.dk < 9",
            Jf::Used,
        ),
        (
            "select t.k, count(*) from t join dim on t.k = dim.dk where dim.fid < 75 group by t.k",
            Jf::Used,
        ),
        // The keys crossing to the build side under an aggregate (TPC-H Q17's shape).
        (
            "select sum(t.x) from t, dim where dim.dk = t.k and dim.cat = 'a' and dim.fid < 500 \
             and t.x < (select avg(t2.x) from t t2 where t2.k = dim.dk)",
            Jf::Used,
        ),
        // A source as big as the target (its keys would drop little): no filter.
        (
            "select count(*), sum(t2.x) from t join t t2 on t.id = t2.id where t2.k >= 0",
            Jf::None,
        ),
        // No keys: an empty build side, and one whose keys are all null.
        (
            "select count(*) from t join dim on t.id = dim.fid where dim.cat = 'zzz'",
            Jf::Planned,
        ),
        (
            "select count(*) from t join dim on t.id = dim.nk where dim.cat = 'n'",
            Jf::Planned,
        ),
        // Semi, anti and outer joins: only where dropping unmatched rows is allowed.
        (
            "select count(*) from t where t.id in (select fid from dim where cat = 'c')",
            Jf::Used,
        ),
        (
            "select count(*) from t where t.id not in (select fid from dim where cat = 'c')",
            Jf::None,
        ),
        (
            "select count(*) from t where not exists (select 1 from dim where dim.fid = t.id and dim.cat = 'c')",
            Jf::None,
        ),
        (
            "select count(*), count(dim.fid) from t left join dim on t.id = dim.fid and dim.cat = 'a'",
            Jf::None,
        ),
        (
            "select count(*), count(t.id) from dim left join t on t.id = dim.fid where dim.cat = 'a'",
            Jf::Used,
        ),
        (
            "select count(*) from t full join dim on t.id = dim.fid where dim.cat = 'a' or dim.cat is null",
            Jf::None,
        ),
    ];
    runtime().block_on(async {
        let reference = reference();
        register_in_memory(&reference, "dim", &dim_batch());
        for (fact, dim) in [(&f.sift, &dim_sift), (&f.parquet, &dim_parquet)] {
            for threads in [1, 3] {
                let on = session(threads);
                let off = session(threads);
                off.sql("set sift.join_filters = false").await.expect("set");
                // The hash joins' own dynamic filters would drop the same rows: off in both,
                // so that the counters compare join filters with none.
                for ctx in [&on, &off] {
                    ctx.sql("set datafusion.optimizer.enable_join_dynamic_filter_pushdown = false")
                        .await
                        .expect("set");
                }
                for ctx in [&on, &off] {
                    let open = |p: &PathBuf| {
                        Arc::new(SiftTable::open(&p.to_string_lossy()).expect("open"))
                    };
                    ctx.register_table("t", open(fact)).expect("register");
                    ctx.register_table("dim", open(dim)).expect("register");
                }
                for &(sql, expect) in queries {
                    let want = rows(&reference, sql).await;
                    assert_eq!(rows(&on, sql).await, want, "on, {threads} threads: {sql}");
                    assert_eq!(rows(&off, sql).await, want, "off, {threads} threads: {sql}");
                    let (plan_on, text) = executed_plan(&on, sql).await;
                    let (plan_off, _) = executed_plan(&off, sql).await;
                    let (m_on, m_off) = (
                        summed_scan_counters(&plan_on),
                        summed_scan_counters(&plan_off),
                    );
                    let used = m_on.get("join_filters").copied().unwrap_or(0);
                    assert_eq!(m_off.get("join_filters").copied().unwrap_or(0), 0, "{sql}");
                    assert_eq!(
                        text.contains("join_filters=["),
                        expect != Jf::None,
                        "{sql}\n{text}"
                    );
                    if expect == Jf::Used {
                        assert!(used > 0, "no join filter reached a scan: {sql}\n{text}");
                        assert!(
                            m_on["rows_matched"] < m_off["rows_matched"],
                            "{sql}: {m_on:?} vs {m_off:?}\n{text}"
                        );
                    }
                }
            }
        }
    });
}

/// A Hive-partitioned tree as one table: the directories' values are columns (integers
/// where every value is one, `__HIVE_DEFAULT_PARTITION__` null), a filter on them keeps
/// only the files it can hold rows of, and files of other columns unify (a missing
/// column is null, a narrower integer widens). Results equal DataFusion's own on the same
/// rows in memory.
#[test]
fn hive_partitions_are_columns_and_prune_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch();
    let n = b.num_rows();
    let parts = [
        ("year=2023/region=eu", 0..n / 4),
        ("year=2023/region=us", n / 4..n / 2),
        ("year=2024/region=eu", n / 2..3 * n / 4),
        ("year=__HIVE_DEFAULT_PARTITION__/region=eu", 3 * n / 4..n),
    ];
    let mut reference_batches = Vec::new();
    for (i, (part, rows)) in parts.iter().enumerate() {
        let slice = b.slice(rows.start, rows.len());
        // The last file lacks column `b` and stores `k` as 16-bit integers.
        let stored = if i == parts.len() - 1 {
            let k = arrow::compute::cast(slice.column(1), &DataType::Int16).expect("cast");
            let fields: Vec<Field> = schema()
                .fields()
                .iter()
                .filter(|f| f.name() != "b")
                .map(|f| match f.name().as_str() {
                    "k" => Field::new("k", DataType::Int16, true),
                    _ => f.as_ref().clone(),
                })
                .collect();
            let mut columns: Vec<ArrayRef> = slice.columns()[..6].to_vec();
            columns[1] = k;
            RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch")
        } else {
            slice.clone()
        };
        let path = dir.path().join(part).join("part-0.sift");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        write_sift(&path, &stored, 700);
        // The same rows in memory, with the partition columns.
        let year = part[5..9].parse::<i64>().ok();
        let region = &part[part.len() - 2..];
        let mut columns = slice.columns().to_vec();
        if i == parts.len() - 1 {
            columns[6] = arrow::array::new_null_array(&DataType::Boolean, slice.num_rows());
        }
        columns.push(Arc::new(Int64Array::from(vec![year; slice.num_rows()])));
        columns.push(Arc::new(StringArray::from(vec![region; slice.num_rows()])));
        reference_batches.push(columns);
    }
    let mut fields: Vec<Field> = schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[6] = fields[6].clone().with_nullable(true);
    fields.push(Field::new("year", DataType::Int64, true));
    fields.push(Field::new("region", DataType::Utf8, false));
    let full = Arc::new(Schema::new(fields));
    let reference_batches: Vec<RecordBatch> = reference_batches
        .into_iter()
        .map(|c| RecordBatch::try_new(full.clone(), c).expect("reference batch"))
        .collect();
    let queries = [
        "select year, region, count(*), sum(id), min(k), max(k) from t group by year, region",
        "select id, k, s, year from t where year = 2024 and k < 20",
        "select id, year, region from t where year is null and id % 7 = 0",
        "select id, year from t where year >= 2024 or id < 40",
        "select count(*), count(b) from t where region = 'eu'",
        "select id from t where region = 'us' and year = 2023 and s like 'a%'",
        "select year, count(*) from t where year in (2023, 2025) group by year",
        "select region, count(*), sum(p), min(k), max(k), avg(k) from t group by region",
        // Grouped by a partition column (its values bound it, as a small range of codes).
        "select year, count(*), sum(id), max(k) from t group by year",
        // Answered from the statistics: a partition column's values are its bounds.
        "select min(year), max(year), count(*) from t",
        // Extremes and the selected rows counted, filtered on a partition column, one
        // column widened in one file, a partition column among them.
        "select count(*), min(k), max(year), max(id) from t where region = 'eu' and k < 30",
    ];
    runtime().block_on(async {
        let reference = SessionContext::new();
        let mem = MemTable::try_new(full.clone(), vec![reference_batches]).expect("mem table");
        reference
            .register_table("t", Arc::new(mem))
            .expect("register");
        let table = SiftTable::open(&dir.path().to_string_lossy()).expect("open");
        assert_eq!(datafusion::catalog::TableProvider::schema(&table), full);
        for threads in [1, 3] {
            let ctx = session(threads);
            ctx.register_table("t", Arc::new(table.clone()))
                .expect("register");
            for q in queries {
                assert_eq!(
                    rows(&ctx, q).await,
                    rows(&reference, q).await,
                    "{q} with {threads} threads"
                );
            }
            let plan = |q: &'static str| {
                let ctx = &ctx;
                async move {
                    displayable(physical_plan(ctx, q).await.as_ref())
                        .indent(true)
                        .to_string()
                }
            };
            let [grouped, stats, extremes] = queries[queries.len() - 3..] else {
                unreachable!("three queries")
            };
            let text = plan(grouped).await;
            assert!(text.contains("SiftAggregate"), "{text}");
            let text = plan(stats).await;
            assert!(!text.contains("SiftScan"), "{text}");
            let text = plan(extremes).await;
            assert!(text.contains("count_selected"), "{text}");
        }
        // Partition filters are decided per file: only the 2024 file is scanned, and
        // DataFusion keeps no filter of its own.
        let ctx = session(2);
        ctx.register_table("t", Arc::new(table.clone()))
            .expect("register");
        let plan = physical_plan(&ctx, "select sum(id) from t where year = 2024").await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(!text.contains("FilterExec"), "{text}");
        assert!(
            text.contains("year=2024/region=eu/part-0.sift") && !text.contains("year=2023"),
            "{text}"
        );
    });
}

/// Rows with a struct (`actor`, a tenth null) and a list of strings (`tags`).
fn nested_batch() -> RecordBatch {
    use arrow::array::{ListBuilder, StringBuilder, StructArray};
    use arrow::datatypes::Fields;
    let n = 5000;
    // The fields are null where the struct is, as Sift stores and returns them: a field of
    // a null struct is null. (DataFusion 55's `get_field` returns the field's own value
    // there, so a reference table holding other values under null structs would answer
    // `actor.id < 40` differently.)
    let present = |i: i64| i % 10 != 3;
    let user_id: Int64Array = (0..n)
        .map(|i| (present(i) && i % 13 != 5).then_some(i * 7 % 1000))
        .collect();
    let name: StringArray = (0..n)
        .map(|i| present(i).then(|| format!("u{}", i % 31)))
        .collect();
    let user = StructArray::try_new(
        Fields::from(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]),
        vec![Arc::new(user_id), Arc::new(name)],
        Some((0..n).map(present).collect::<Vec<_>>().into()),
    )
    .expect("struct");
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in 0..n {
        for j in 0..i % 4 {
            tags.values().append_value(format!("t{}", (i + j) % 6));
        }
        tags.append(i % 11 != 0);
    }
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        ("actor", Arc::new(user)),
        ("tags", Arc::new(tags.finish())),
    ])
    .expect("batch")
}

#[test]
fn struct_fields_are_pushed_into_the_scan_and_nested_columns_returned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested.sift");
    let b = nested_batch();
    write_sift(&path, &b, 1_000);
    runtime().block_on(async {
        let reference = SessionContext::new();
        register_in_memory(&reference, "t", &b);
        let ctx = session(2);
        let table = SiftTable::open(&path.to_string_lossy()).expect("open");
        ctx.register_table("t", Arc::new(table)).expect("register");
        for q in [
            "select id, actor, tags from t where actor.id < 40",
            "select id, tags from t where actor['name'] = 'u7' and id < 3000",
            "select count(*) from t where actor.id is null",
            "select id, actor.name from t where array_has(tags, 't3') and id < 500",
            "select cardinality(tags), count(*) from t group by 1",
        ] {
            assert_eq!(rows(&ctx, q).await, rows(&reference, q).await, "{q}");
        }
        let plan = physical_plan(&ctx, "select id, tags from t where actor.id < 40").await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(!text.contains("FilterExec"), "{text}");
        let scan = text.lines().find(|l| l.contains("SiftScan")).expect("scan");
        assert!(scan.contains("\"actor.id\" < 40"), "{scan}");
    });
}

/// A column sorted in every block, each block starting at or above the largest value of
/// the one before (files too, in the table's order or once read in the order of their
/// least values), is known sorted by the scan: DataFusion drops the sort of an `ORDER BY`
/// on it, and on several threads the partitions are concatenated in order instead of
/// merged. A column out of order anywhere (inside a block, between blocks, or between
/// files whose ranges overlap), or holding a null, keeps its sort; the rows always come in
/// DataFusion's order.
#[test]
fn sorted_columns_drop_sorts_and_keep_the_order() {
    let n = 1_000i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("up", DataType::Int32, false),
        Field::new("swap", DataType::Int64, false),
        Field::new("late", DataType::Int64, false),
        Field::new("d", DataType::Date32, true),
    ]));
    let rows = |from: i64, to: i64| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(from..to)),
            // Sorted in each 100-row block, the fourth starting below the third's end.
            Arc::new(Int32Array::from_iter_values((from..to).map(|i| {
                (i / 100 * 10 - i64::from(i / 100 == 3) * 15 + i % 100 / 10) as i32
            }))),
            // Two neighbours swapped inside one block, whose bounds still follow.
            Arc::new(Int64Array::from_iter_values((from..to).map(|i| match i {
                457 => 458,
                458 => 457,
                i => i,
            }))),
            // Sorted, but the last block starts below the largest value of the one before.
            Arc::new(Int64Array::from_iter_values(
                (from..to).map(|i| if i >= 900 { i - 150 } else { i }),
            )),
            Arc::new(Date32Array::from_iter(
                (from..to).map(|i| (i != 500).then_some(i as i32)),
            )),
        ];
        RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("one.sift");
    write_sift(&one, &rows(0, n), 100);
    // Directories of two files each, in name order: ascending; descending (read in the
    // order of their least values); each file sorted but their ranges overlapping.
    let halves = |a: (i64, i64), b: (i64, i64)| {
        concat_batches(&schema, &[rows(a.0, a.1), rows(b.0, b.1)]).expect("concat")
    };
    for (name, first, second) in [
        ("ascending", rows(0, 500), rows(500, n)),
        ("descending", rows(500, n), rows(0, 500)),
        (
            "overlapping",
            halves((0, 250), (500, 750)),
            halves((250, 500), (750, n)),
        ),
    ] {
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).expect("dir");
        write_sift(&sub.join("1.sift"), &first, 100);
        write_sift(&sub.join("2.sift"), &second, 100);
    }
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &rows(0, n));
    // (table, column, threads, whether the scan is known sorted on it).
    let cases = [
        ("one.sift", "a", 1, true),
        ("one.sift", "up", 1, false),
        ("one.sift", "swap", 1, false),
        ("one.sift", "late", 1, false),
        ("one.sift", "d", 1, false),
        ("one.sift", "a", 3, true),
        ("one.sift", "up", 3, false),
        ("ascending", "a", 1, true),
        ("ascending", "a", 2, true),
        ("descending", "a", 1, true),
        ("descending", "a", 2, true),
        ("overlapping", "a", 1, false),
        ("overlapping", "a", 2, false),
    ];
    let rt = runtime();
    rt.block_on(async {
        for (table, column, threads, sorted) in cases {
            let ctx = session(threads);
            let path = dir.path().join(table);
            let t = SiftTable::open(&path.to_string_lossy()).expect("open");
            ctx.register_table("t", Arc::new(t)).expect("register");
            let sql = format!("select {column} as c, a as k from t where a % 7 <> 3 order by c, k");
            let plan = physical_plan(&ctx, &sql).await;
            let text = displayable(plan.as_ref()).indent(true).to_string();
            assert_eq!(
                !text.contains("SortExec:"),
                sorted,
                "{table} {column} {threads} threads:\n{text}"
            );
            // Partitions sorted apart are merged; those of a sorted column concatenated.
            let merged = text.contains("SortPreservingMergeExec");
            let concatenated = text.contains("ConcatPartitionsExec");
            assert_eq!(
                merged,
                threads > 1 && !sorted,
                "{table} {column} {threads}:\n{text}"
            );
            assert_eq!(
                concatenated,
                threads > 1 && sorted,
                "{table} {column} {threads}:\n{text}"
            );
            let got = ordered_rows(&ctx, &sql).await.expect("run");
            let want = ordered_rows(&reference, &sql).await.expect("reference");
            assert_eq!(got, want, "{table} {column} {threads} threads");
        }
    });
}

/// A sort on a column the scan returns sorted is dropped, ascending or descending (the
/// scan's rows read last first), through the filters and projections between; a sort on
/// it and then other keys sorts only within runs of equal first keys. On several
/// threads the partitions are concatenated in order, a `LIMIT` (with an offset across the
/// partitions' boundary too) becomes a limit on each partition, pushed into the scan
/// where no filter lies between, and the scan keeps no dynamic filter of the dropped
/// sort. Sorts on other columns stay. All of it holds for files that are each sorted but
/// listed out of order, read in the key's order. The rows are DataFusion's over the same
/// rows in memory.
#[test]
fn sorts_on_sorted_scans_become_concatenations_and_limits() {
    let n = 1_000i64;
    // Nullable columns without a null: DataFusion compares where a sort puts the nulls
    // of a nullable column even so.
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "a",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            true,
        ),
        (
            "b",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 37 % 101))),
            true,
        ),
        // Sorted, in runs of 7 equal values across the ends of blocks and partitions.
        (
            "g",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 7))),
            true,
        ),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.sift");
    write_sift(&path, &batch, 100);
    // The same rows as three files listed out of order (the last third first), read in
    // the order of the sort's key; runs of equal `g` cross the files' ends.
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).expect("mkdir");
    for (name, rows) in [
        ("0.sift", 700..1000),
        ("1.sift", 0..350),
        ("2.sift", 350..700),
    ] {
        let slice = batch.slice(rows.start, rows.end - rows.start);
        write_sift(&parts.join(name), &slice, 100);
    }
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &batch);
    // What becomes of a sort: dropped, sorted within runs of equal first keys, or kept.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Sort {
        Dropped,
        Partial,
        Kept,
    }
    // Each query ascending and descending.
    let cases = [
        ("select a, b from t order by a {dir} limit 7", Sort::Dropped),
        (
            "select a, b from t order by a {dir} nulls first limit 3",
            Sort::Dropped,
        ),
        ("select a from t order by a {dir} nulls last", Sort::Dropped),
        (
            "select a, b from t order by a {dir} limit 6 offset 497",
            Sort::Dropped,
        ),
        (
            "select a from t where b % 3 = 1 order by a {dir}",
            Sort::Dropped,
        ),
        (
            "select a * 2 as x, b from t where b % 5 <> 0 order by a {dir} limit 20",
            Sort::Dropped,
        ),
        (
            "select g, b from t order by g {dir}, b limit 9",
            Sort::Partial,
        ),
        (
            "select g, a, b from t order by g {dir}, b {dir} limit 6 offset 495",
            Sort::Partial,
        ),
        (
            "select g, b from t where b % 3 = 1 order by g {dir}, b",
            Sort::Partial,
        ),
        ("select a, b from t order by b {dir}, a limit 5", Sort::Kept),
    ];
    let runs = (cases.iter()).flat_map(|&(sql, sort)| {
        [("asc", false), ("desc", true)]
            .into_iter()
            .flat_map(move |(dir, desc)| {
                [1, 2].map(|threads| (sql.replace("{dir}", dir), sort, desc, threads))
            })
    });
    let tables = [path.as_path(), parts.as_path()];
    let runs = runs.flat_map(|run| tables.map(|table| (run.clone(), table)));
    let rt = runtime();
    rt.block_on(async {
        for ((sql, sort, desc, threads), table) in runs {
            let sql = sql.as_str();
            let ctx = session(threads);
            let t = SiftTable::open(&table.to_string_lossy()).expect("open");
            ctx.register_table("t", Arc::new(t)).expect("register");
            let plan = physical_plan(&ctx, sql).await;
            let text = displayable(plan.as_ref()).indent(true).to_string();
            let full = text
                .lines()
                .any(|l| l.trim_start().starts_with("SortExec:"));
            let partial = text.contains("PartialSortExec");
            let got = match (full, partial) {
                (false, false) => Sort::Dropped,
                (false, true) => Sort::Partial,
                _ => Sort::Kept,
            };
            assert_eq!(got, sort, "{sql}:\n{text}");
            let reversed = sort != Sort::Kept && desc;
            assert_eq!(text.contains("reversed"), reversed, "{sql}:\n{text}");
            if sort == Sort::Partial && threads > 1 {
                // Rows tied on the first key may lie on either side of a partition's end.
                assert!(text.contains("SortPreservingMergeExec"), "{sql}:\n{text}");
                assert!(!text.contains("limit="), "{sql}:\n{text}");
            }
            if sort == Sort::Dropped && threads > 1 {
                assert!(!text.contains("SortPreservingMergeExec"), "{sql}:\n{text}");
                assert!(text.contains("ConcatPartitionsExec"), "{sql}:\n{text}");
                let limit = sql.contains("limit") == text.contains("LocalLimitExec");
                assert!(limit, "{sql}:\n{text}");
                // Pushed into the scan where no filter lies between.
                let pushed = sql.contains("limit") && !text.contains("FilterExec");
                assert_eq!(text.contains("limit="), pushed, "{sql}:\n{text}");
                assert!(!text.contains("DynamicFilter"), "{sql}:\n{text}");
            }
            let want = ordered_rows(&reference, sql).await.expect("reference");
            assert_eq!(ordered_rows(&ctx, sql).await.expect("run"), want, "{sql}");
        }
    });
}

/// A TopK's threshold (an `ORDER BY … LIMIT` on columns the scan does not hold sorted)
/// is tested on the rows of every block read once it is set, not only against the
/// blocks' zone maps, so the other columns are decoded for few rows; and the scan's
/// blocks are read best first by their zone maps, so that a key ascending over the
/// blocks (but not sorted inside them) asked for descending starts at the last block and
/// prunes the others, also where a scan on one thread declares another column sorted.
/// The rows are DataFusion's over the same rows in memory.
#[test]
fn top_k_thresholds_select_rows() {
    let n = 20_000i64;
    let batch = RecordBatch::try_from_iter([
        (
            "a",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "r",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| i * 7919 % 20_011),
            )),
        ),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("row-{i}")),
            )),
        ),
    ])
    .expect("batch");
    // Neighbours swapped: ascending from block to block, not inside them; beside a sorted
    // column, which a scan on one thread declares (the blocks reordered all the same).
    let rising = RecordBatch::try_from_iter([
        (
            "c",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i ^ 1))) as ArrayRef,
        ),
        ("id", Arc::new(Int64Array::from_iter_values(0..n))),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("row-{i}")),
            )),
        ),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = SessionContext::new();
    for (name, batch) in [("t", &batch), ("rising", &rising)] {
        write_sift(&dir.path().join(format!("{name}.sift")), batch, 1_000);
        register_in_memory(&reference, name, batch);
    }
    let rt = runtime();
    rt.block_on(async {
        for threads in [1, 2] {
            let ctx = session(threads);
            for name in ["t", "rising"] {
                let path = dir.path().join(format!("{name}.sift"));
                let t = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table(name, Arc::new(t)).expect("register");
            }
            for sql in [
                "select * from t order by r limit 5",
                "select a, s from t order by r desc, a limit 7",
                "select * from rising order by c desc limit 5",
                "select id, s from rising where id < 19990 order by c desc limit 5",
            ] {
                let want = ordered_rows(&reference, sql).await.expect("reference");
                assert_eq!(ordered_rows(&ctx, sql).await.expect("run"), want, "{sql}");
                let (plan, text) = executed_plan(&ctx, sql).await;
                assert!(text.contains("row_bounds"), "{sql}:\n{text}");
                // The first block of each partition whole (at most 3 columns of 1,000
                // rows), then only the rows under the threshold; tested against the zone
                // maps alone, 15,000 to 57,000 values, and 40,000 from `rising` read in
                // file order.
                let decoded = summed_scan_counters(&plan)["values_decoded"];
                assert!(decoded <= 4_000 * threads, "{sql}: {decoded}\n{text}");
            }
        }
    });
}

/// A Parquet file whose writer declares its rows sorted by a column (first in its row
/// groups' `sorting_columns`, ascending or descending) is scanned as sorted on it where
/// the row groups follow each other's bounds, and so is a column after only columns that
/// hold one value in each row group: an `ORDER BY` on it, ascending or descending, needs
/// no sort, on one thread or two. A declaration that the row groups' bounds contradict, a
/// column after one that varies, and a file without the declaration keep their sort; a
/// file whose rows break its declaration is an error, never rows out of order.
#[test]
fn parquet_sorting_columns_declare_the_scan_sorted() {
    use parquet::file::metadata::SortingColumn;
    let n = 1_000i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Int64, false),
        // Sorted, but the last row groups start below the largest value before them.
        Field::new("late", DataType::Int64, false),
        // Sorted but for two neighbours swapped inside one row group: inside a page, and
        // on either side of a page boundary.
        Field::new("swap", DataType::Int64, false),
        Field::new("swap_pages", DataType::Int64, false),
        // One value in each 100-row row group, and one in each 150 rows.
        Field::new("p", DataType::Int64, false),
        Field::new("q", DataType::Int64, false),
        // Descending (nullable, without a null); and so but for two neighbours swapped.
        Field::new("d", DataType::Int64, true),
        Field::new("d_swap", DataType::Int64, false),
    ]));
    let swapped = |x: i64, y: i64| {
        Int64Array::from_iter_values((0..n).map(move |i| match i {
            i if i == x => y,
            i if i == y => x,
            i => i,
        }))
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..n)),
        Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 10))),
        Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| if i >= 900 { i - 150 } else { i }),
        )),
        Arc::new(swapped(457, 458)),
        Arc::new(swapped(449, 450)),
        Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 100))),
        Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 150))),
        Arc::new(Int64Array::from_iter_values((0..n).rev())),
        Arc::new(Int64Array::from_iter_values(
            (0..n)
                .rev()
                .map(|i| i + i64::from(i == 620) - i64::from(i == 621)),
        )),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, batch: &RecordBatch, sorting: &[(i32, bool)]| {
        let sorting = sorting
            .iter()
            .map(|&(column_idx, descending)| SortingColumn {
                column_idx,
                descending,
                nulls_first: false,
            });
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_data_page_row_count_limit(50)
            .set_write_batch_size(50)
            .set_sorting_columns(Some(sorting.collect()).filter(|s: &Vec<_>| !s.is_empty()))
            .build();
        write_parquet_with(&dir.path().join(name), batch, props);
    };
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &batch);
    // (file, its sorting columns (leaf, descending), the column ordered by, whether the
    // scan is sorted on it).
    type Case<'a> = (&'a str, &'a [(i32, bool)], &'a str, bool);
    let cases: [Case; 13] = [
        ("a.parquet", &[(0, false)], "a", true),
        // The rows of `d.parquet` as three files listed out of order, each declared
        // descending: read in the descending order of their greatest values.
        ("d_parts", &[(7, true)], "d", true),
        ("a.parquet", &[(0, false)], "b", false),
        ("down.parquet", &[(0, true)], "a", false),
        ("d.parquet", &[(7, true)], "d", true),
        ("d_swap.parquet", &[(8, true)], "d_swap", true),
        ("second.parquet", &[(1, false), (0, false)], "a", false),
        (
            "after_one_value.parquet",
            &[(5, false), (0, false)],
            "a",
            true,
        ),
        (
            "after_two_values.parquet",
            &[(6, false), (0, false)],
            "a",
            false,
        ),
        ("late.parquet", &[(2, false)], "late", false),
        ("none.parquet", &[], "a", false),
        ("swap.parquet", &[(3, false)], "swap", true),
        ("swap_pages.parquet", &[(4, false)], "swap_pages", true),
    ];
    // Each file written once, before any query: a query's partitions may still be reading
    // one when the next query starts, and rewriting a file in place cuts the pages mapped.
    for (name, sorting, _, _) in cases {
        if name != "d_parts" {
            write(name, &batch, sorting);
            continue;
        }
        std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        for (part, rows) in [(0, 700..1000), (1, 0..350), (2, 350..700)] {
            let slice = batch.slice(rows.start, rows.end - rows.start);
            write(&format!("{name}/{part}.parquet"), &slice, sorting);
        }
    }
    let rt = runtime();
    rt.block_on(async {
        let runs = cases.into_iter().flat_map(|c| {
            [(1, "asc"), (2, "asc"), (1, "desc"), (2, "desc")]
                .map(|(threads, order)| (c, threads, order))
        });
        for ((name, _, column, sorted), threads, order) in runs {
            let path = dir.path().join(name);
            let ctx = session(threads);
            let t = SiftTable::open(&path.to_string_lossy()).expect("open");
            ctx.register_table("t", Arc::new(t)).expect("register");
            let sql = format!("select {column} from t where a % 7 <> 3 order by {column} {order}");
            let plan = physical_plan(&ctx, &sql).await;
            let text = displayable(plan.as_ref()).indent(true).to_string();
            assert_eq!(
                !text.contains("SortExec"),
                sorted,
                "{name} {column} {order} {threads} threads:\n{text}"
            );
            let want = ordered_rows(&reference, &sql).await.expect("reference");
            match ordered_rows(&ctx, &sql).await {
                Err(e) if column.contains("swap") => {
                    let e = e.to_string();
                    assert!(
                        e.contains(name) && e.contains(&format!("column {column}")),
                        "{e}"
                    );
                    assert!(e.contains("declared sorted by the file"), "{e}");
                }
                got => assert_eq!(
                    got.expect("sorted scan"),
                    want,
                    "{name} {column} {order} {threads} threads"
                ),
            }
        }
    });
}

/// A hash join's dynamic filter that Sift cannot evaluate (a lookup in the join's hash
/// table) is evaluated on the batches of a scan below an aggregate below the join, and
/// drops the rows the join would: while it drops most, on every batch; once it kept
/// most rows of a trial, no more. A scan feeding the join directly is left alone. The
/// answers are DataFusion's over the same rows in memory.
#[test]
fn dynamic_lookups_below_an_aggregate_drop_rows() {
    let n = 140_000i64;
    let big = id_k_batch(n, 97);
    // Every hundredth id (too many keys for an IN list), or two ids in three.
    let dim = |step: i64| {
        let keep = |i: &i64| {
            if step == 100 {
                i % 100 == 0
            } else {
                i % 3 != 0
            }
        };
        let fid = Int64Array::from_iter_values((0..n).filter(keep));
        RecordBatch::try_from_iter([("fid", Arc::new(fid) as ArrayRef)]).expect("dim")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let big_path = dir.path().join("big.sift");
    write_sift(&big_path, &big, 20_000);
    let grouped = "select count(*), sum(a.total) from (select id, sum(k) total from big \
                   group by id) a join dim on a.id = dim.fid";
    let direct = "select count(*), sum(big.k) from big join dim on big.id = dim.fid";
    // (dim's step, query, marked, rows tested, rows dropped).
    let cases = [
        (100, grouped, true, n as usize, (n - n / 100) as usize),
        // Keeps two rows in three: tried on four batches of 20,000 (65,536 rows and
        // more), then left to the join.
        (3, grouped, true, 80_000, 26_667),
        (100, direct, false, 0, 0),
    ];
    let rt = runtime();
    rt.block_on(async {
        for (step, sql, marked, tested, dropped) in cases {
            let dim_path = dir.path().join(format!("dim{step}.sift"));
            write_sift(&dim_path, &dim(step), 20_000);
            let ctx = session(1);
            let reference = SessionContext::new();
            for (name, path, batch) in [("big", &big_path, &big), ("dim", &dim_path, &dim(step))] {
                let table = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table(name, Arc::new(table)).expect("register");
                register_in_memory(&reference, name, batch);
            }
            // DataFusion's own aggregate (a filter passes through it), and no join filter
            // from dim's scan (dim is no filtered table, but to be sure).
            ctx.sql("set sift.scan_aggregates = false")
                .await
                .expect("set");
            ctx.sql("set sift.join_filters = false").await.expect("set");
            assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await, "{sql}");
            let (plan, text) = executed_plan(&ctx, sql).await;
            let scan = text.lines().find(|l| l.contains("big.sift")).expect("scan");
            assert_eq!(scan.contains("dynamic_residual"), marked, "{sql}\n{text}");
            let counters = scan_counters(&plan);
            let big_scan = counters
                .iter()
                .find(|m| m.get("rows_scanned") == Some(&(n as usize)))
                .expect("big's scan");
            let got = |name: &str| big_scan.get(name).copied().unwrap_or(0);
            assert_eq!(
                (got("rows_tested_dynamic"), got("rows_dropped_dynamic")),
                (tested, dropped),
                "{sql} with dim step {step}\n{text}\n{counters:?}"
            );
        }
    });
}

/// The hash joins of a plan and how many of them indexed their build rows in an array.
fn array_maps(plan: &Arc<dyn ExecutionPlan>) -> (usize, usize) {
    let (mut joins, mut arrays) = (0, 0);
    let mut stack = vec![Arc::clone(plan)];
    while let Some(p) = stack.pop() {
        if p.name() == "HashJoinExec" {
            joins += 1;
            let created = p
                .metrics()
                .and_then(|m| m.sum_by_name("array_map_created_count"))
                .map_or(0, |v| v.as_usize());
            arrays += created;
        }
        stack.extend(p.children().into_iter().cloned());
    }
    (joins, arrays)
}

#[test]
fn sparse_integer_join_keys_index_an_array() {
    // 60,000 ids, joined to a side holding every 50th id (2 % of their range): above the
    // session's density for an array, below DataFusion's default.
    let n = 60_000i64;
    let big = id_k_batch(n, 7);
    let dim = RecordBatch::try_from_iter([(
        "fid",
        Arc::new(Int64Array::from_iter_values((0..n).step_by(50))) as ArrayRef,
    )])
    .expect("dim");
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = SessionContext::new();
    let rt = runtime();
    let sql = "select count(*), sum(big.k) from big join dim on big.id = dim.fid \
               where big.id not in (select fid from dim where fid % 100 = 0)";
    rt.block_on(async {
        let ctx = session(1);
        for (name, batch) in [("big", &big), ("dim", &dim)] {
            register_both(&ctx, &reference, dir.path(), name, batch, 20_000);
        }
        let want = rows(&reference, sql).await;
        assert_eq!(rows(&ctx, sql).await, want, "{sql}");
        let (plan, text) = executed_plan(&ctx, sql).await;
        assert_eq!(array_maps(&plan), (2, 2), "{text}");
        // DataFusion's own density: both joins hash their keys, with the same answer.
        ctx.sql("set datafusion.execution.perfect_hash_join_min_key_density = 0.15")
            .await
            .expect("set");
        assert_eq!(rows(&ctx, sql).await, want, "{sql}");
        let (plan, text) = executed_plan(&ctx, sql).await;
        assert_eq!(array_maps(&plan), (2, 0), "{text}");
    });
}

#[test]
fn sorted_wide_group_keys_are_grouped_by_runs() {
    // `o` never decreases, in runs of three (some across blocks of 1,000 rows), over a
    // range too wide to index; `w`'s blocks follow one another, but within each its
    // values (each twice) are shuffled; `u` spans as much as `o`, unsorted.
    let n = 30_000i64;
    let batch = RecordBatch::try_from_iter([
        (
            "o",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 3 * 1_000))) as ArrayRef,
        ),
        (
            "w",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| {
                i / 1_000 * 1_000_000 + (i * 7_919) % 1_000 / 2 * 1_000
            }))),
        ),
        (
            "u",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i * 7_919) % n * 1_000),
            )),
        ),
        (
            "q",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|i| i128::from(i * 37 % 10_000)))
                    .with_precision_and_scale(15, 2)
                    .expect("decimal"),
            ),
        ),
        (
            "v",
            Arc::new(Int32Array::from_iter(
                (0..n).map(|i| (i % 5 != 0).then_some((i % 101) as i32)),
            )),
        ),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let sift = dir.path().join("t.sift");
    write_sift(&sift, &batch, 1_000);
    // Without `sorting_columns`, as most writers leave it: only the zone maps show `o`
    // and `w` in order.
    let parquet = dir.path().join("t.parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1_000))
        .build();
    write_parquet_with(&parquet, &batch, props);
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &batch);
    #[derive(Clone, Copy, PartialEq)]
    enum Key {
        Sorted,
        Clustered,
        Neither,
    }
    // (query, its group key)
    let queries = [
        (
            "select o, count(*), sum(q), avg(q), min(v), max(v), count(v) from t group by o",
            Key::Sorted,
        ),
        (
            "select o, sum(q) from t where v > 50 group by o",
            Key::Sorted,
        ),
        (
            "select o from t group by o having count(*) > 2",
            Key::Sorted,
        ),
        (
            "select w, count(*), sum(q), max(v) from t group by w",
            Key::Clustered,
        ),
        ("select u, count(*), sum(q) from t group by u", Key::Neither),
        ("select o, u, count(*) from t group by o, u", Key::Neither),
    ];
    runtime().block_on(async {
        for path in [&sift, &parquet] {
            for threads in [1, 3] {
                let ctx = session(threads);
                let table = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table("t", Arc::new(table)).expect("register");
                for (sql, key) in queries {
                    let want = rows(&reference, sql).await;
                    let on = format!("{sql} on {} with {threads} threads", path.display());
                    assert_eq!(rows(&ctx, sql).await, want, "{on}");
                    let (_, text) = executed_plan(&ctx, sql).await;
                    // The Sift file's `o` is sorted, by its statistics: its groups are
                    // completed next to the scan batch by batch (an average divided
                    // there). A key only clustered (the Parquet file's `o`, and `w`) is
                    // completed block by block.
                    let runs = key != Key::Neither;
                    let complete = runs;
                    assert_eq!(text.contains("SiftAggregate"), runs, "{on}\n{text}");
                    assert_eq!(text.contains("mode=complete"), complete, "{on}\n{text}");
                    if runs {
                        assert_eq!(text.contains("mode=Final"), !complete, "{on}\n{text}");
                    }
                }
            }
        }
    });
}

/// A session of `threads` with `path` as `t`, read in batches of `batch_size`, in which
/// each of `queries` returns `reference`'s rows and is completed next to the scan, unless
/// DataFusion spreads the scan's batches over the threads (fewer blocks than threads) and
/// aggregates them itself.
async fn complete_session(
    path: &Path,
    reference: &SessionContext,
    queries: &[&str],
    threads: usize,
    batch_size: usize,
) -> SessionContext {
    let ctx = session(threads);
    let table = SiftTable::open(&path.to_string_lossy()).expect("open");
    ctx.register_table("t", Arc::new(table)).expect("register");
    ctx.sql(&format!(
        "set datafusion.execution.batch_size = {batch_size}"
    ))
    .await
    .expect("set");
    for sql in queries {
        let on = format!("{sql} with {threads} threads");
        assert_eq!(rows(&ctx, sql).await, rows(reference, sql).await, "{on}");
        let (_, text) = executed_plan(&ctx, sql).await;
        let spread = text.contains("RoundRobinBatch");
        assert_eq!(
            text.contains("SiftAggregate: mode=complete"),
            !spread,
            "{on}\n{text}"
        );
        assert_eq!(text.contains("AggregateExec"), spread, "{on}\n{text}");
    }
    ctx
}

/// Writes `batch` to the Parquet file `path`, one row group per length of `lens`.
fn write_row_groups(
    path: &Path,
    batch: &RecordBatch,
    lens: &[usize],
    props: Option<parquet::file::properties::WriterProperties>,
) {
    let file = std::fs::File::create(path).expect("create parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), props).expect("parquet writer");
    let mut at = 0;
    for &len in lens {
        w.write(&batch.slice(at, len)).expect("write parquet");
        w.flush().expect("row group");
        at += len;
    }
    w.close().expect("close parquet");
}

/// Sorted keys in runs of random lengths (two runs already span too wide a range to
/// index), with values that hold nulls.
fn sorted_runs_batch(runs: &[(u8, u16)], nulls: u8) -> RecordBatch {
    let mut keys = Vec::new();
    let mut key = -5_000_000i64;
    for &(len, gap) in runs {
        key += 70_000 + i64::from(gap);
        keys.extend(std::iter::repeat_n(key, usize::from(len)));
    }
    keyed_batch(keys, |i| i * 7_919 % 100 >= i64::from(nulls))
}

/// The group key `o` with an `Int32` argument `v`, valid in row `i` where `valid(i)`,
/// and a decimal one `q`.
fn keyed_batch(keys: Vec<i64>, valid: impl Fn(i64) -> bool) -> RecordBatch {
    let n = keys.len() as i64;
    let v = Int32Array::from_iter((0..n).map(|i| valid(i).then_some((i * 31 % 201 - 100) as i32)));
    let q = Decimal128Array::from_iter_values((0..n).map(|i| i128::from(i * 37 % 10_000)))
        .with_precision_and_scale(15, 2)
        .expect("decimal");
    RecordBatch::try_from_iter([
        ("o", Arc::new(Int64Array::from(keys)) as ArrayRef),
        ("v", Arc::new(v)),
        ("q", Arc::new(q)),
    ])
    .expect("batch")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Groups by a sorted column completed next to the scan (runs carried across batches
    /// and blocks, partitions' first and last groups merged) equal DataFusion's, whatever
    /// the runs' lengths, the blocks, the batches' length and the partitions; on one
    /// partition they come out in the column's order, which needs no sort.
    #[test]
    fn sorted_runs_complete_their_groups(
        runs in proptest::collection::vec((1u8..40, 0u16..3), 2..300),
        nulls in 0u8..100,
        blocks in 1usize..10,
        batch_size in 8usize..300,
        threads in 1usize..5,
    ) {
        let batch = sorted_runs_batch(&runs, nulls);
        let block_rows = batch.num_rows().div_ceil(blocks);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.sift");
        write_sift(&path, &batch, block_rows);
        let reference = SessionContext::new();
        register_in_memory(&reference, "t", &batch);
        let queries = [
            "select o, count(*), count(v), sum(q), sum(v), min(v), max(v) from t group by o",
            "select o, sum(q), max(v) from t where v > 20 group by o",
            "select o from t group by o having count(*) > 3",
            "select o, avg(q), avg(v), max(q) from t group by o",
        ];
        runtime().block_on(async {
            let ctx = complete_session(&path, &reference, &queries, threads, batch_size).await;
            let sql = "select o, sum(q), min(v) from t group by o order by o";
            let got = ordered_rows(&ctx, sql).await.expect(sql);
            assert_eq!(got, ordered_rows(&reference, sql).await.expect(sql), "{threads}");
            let (_, text) = executed_plan(&ctx, sql).await;
            assert_eq!(text.contains("SortExec"), threads > 1, "{threads}\n{text}");
            let spread = text.contains("RoundRobinBatch");
            assert_eq!(text.contains("mode=complete"), !spread, "{threads}\n{text}");
        });
    }
}

/// A key whose blocks follow one another (each block's values from its least, at or
/// above the block before's greatest, or the mirror of that descending), its rows
/// shuffled within a block or not, and a value on either side of two blocks where
/// `touch`; with an `Int32` argument holding nulls and a decimal one.
fn clustered_blocks_batch(blocks: &[(u8, u8, bool, bool, bool)], descending: bool) -> RecordBatch {
    let mut keys: Vec<i64> = Vec::new();
    let mut last = -3_000_000i64;
    for (b, &(len, width, touch, shuffle, distinct)) in blocks.iter().enumerate() {
        // The first block starts apart from the second's start, so that the key spans
        // too wide a range to index.
        let start = match touch && b > 1 {
            true => last,
            false => last + 70_000,
        };
        let n = i64::from(len);
        // `distinct`: consecutive values, each once (a unique key); else `width` + 1
        // values at most, 1,000 apart.
        let mut block: Vec<i64> = (0..n)
            .map(|i| match distinct {
                true => start + i,
                false => {
                    start + (i * 7 + i64::from(width) * i / 3) % (i64::from(width) + 1) * 1_000
                }
            })
            .collect();
        // The first row holds the block's least value, which `touch` shares.
        block[0] = start;
        block.sort_unstable();
        if shuffle {
            let mut keyed: Vec<(usize, i64)> = (block.iter().enumerate())
                .map(|(i, &k)| ((i * 7_919 + 13) % 1_009, k))
                .collect();
            keyed.sort_unstable();
            block = keyed.into_iter().map(|(_, k)| k).collect();
        }
        last = block.iter().copied().max().unwrap_or(start);
        keys.extend(block);
    }
    if descending {
        keys.reverse();
        keys.iter_mut().for_each(|k| *k = -*k);
    }
    keyed_batch(keys, |i| i % 9 != 4)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Groups by a key only clustered (a Parquet file's row groups follow one another by
    /// their statistics, rows in any order within each) completed block by block next to
    /// the scan equal DataFusion's, whatever the blocks, their order within, values
    /// repeated or each once, values shared by two blocks, the batches' length and the
    /// partitions.
    #[test]
    fn clustered_blocks_complete_their_groups(
        blocks in proptest::collection::vec(
            (1u8..120, 0u8..40, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
            2..12,
        ),
        descending in proptest::bool::ANY,
        batch_size in 8usize..300,
        threads in 1usize..4,
    ) {
        let batch = clustered_blocks_batch(&blocks, descending);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        // One row group per block.
        let mut lens: Vec<usize> = blocks.iter().map(|b| usize::from(b.0)).collect();
        if descending {
            lens.reverse();
        }
        write_row_groups(&path, &batch, &lens, None);
        let reference = SessionContext::new();
        register_in_memory(&reference, "t", &batch);
        let queries = [
            "select o, count(*), count(v), sum(q), sum(v), min(v), max(v) from t group by o",
            "select o, avg(q), avg(v) from t where v > 20 group by o",
            "select o from t group by o having count(*) > 2",
        ];
        runtime().block_on(complete_session(&path, &reference, &queries, threads, batch_size));
    }
}

/// A final phase whose hash partitioning a partitioned join above relies on (through a
/// filter and a projection) stays DataFusion's: complete groups, partitioned by ranges
/// of the key, would meet the other side's rows of the same key in another partition.
#[test]
fn complete_groups_keep_the_partitioning_a_join_relies_on() {
    let runs: Vec<(u8, u16)> = (0..3_000)
        .map(|i| ((i % 7 + 1) as u8, (i % 3) as u16))
        .collect();
    let batch = sorted_runs_batch(&runs, 10);
    let keys = batch.column(0).clone();
    let other = RecordBatch::try_from_iter([
        ("k", keys.slice(0, keys.len() / 2)),
        (
            "w",
            Arc::new(Int64Array::from_iter_values(0..(keys.len() / 2) as i64)) as ArrayRef,
        ),
    ])
    .expect("other");
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = SessionContext::new();
    let sql = "select x.o, x.s, u.w from \
               (select o, sum(q) as s from t group by o having count(*) > 2) x \
               join u on x.o = u.k";
    runtime().block_on(async {
        let ctx = session(4);
        for set in [
            "set datafusion.optimizer.hash_join_single_partition_threshold = 0",
            "set datafusion.optimizer.hash_join_single_partition_threshold_rows = 0",
        ] {
            ctx.sql(set).await.expect("set");
        }
        register_both(&ctx, &reference, dir.path(), "t", &batch, 500);
        register_both(&ctx, &reference, dir.path(), "u", &other, 500);
        assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await);
        let (_, text) = executed_plan(&ctx, sql).await;
        assert!(text.contains("mode=Partitioned"), "{text}");
        assert!(text.contains("SiftAggregate: mode=partial"), "{text}");
        // Without the join's reliance, the same aggregate is completed.
        let alone = "select o, sum(q) as s from t group by o having count(*) > 2";
        assert_eq!(rows(&ctx, alone).await, rows(&reference, alone).await);
        let (_, text) = executed_plan(&ctx, alone).await;
        assert!(text.contains("SiftAggregate: mode=complete"), "{text}");
    });
}

/// The error of `sql` on the file `path` as `t` with `threads`, whose aggregate is
/// planned complete next to the scan.
async fn complete_error(path: &Path, threads: usize, sql: &str) -> String {
    let ctx = session(threads);
    let table = SiftTable::open(&path.to_string_lossy()).expect("open");
    ctx.register_table("t", Arc::new(table)).expect("register");
    let plan = physical_plan(&ctx, sql).await;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    assert!(text.contains("mode=complete"), "{threads}\n{text}");
    let err = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await;
    err.expect_err(sql).to_string()
}

/// A Parquet file that declares a column sorted (`sorting_columns`, which the row
/// groups' bounds do not contradict) while two of its rows are swapped: grouping by it is
/// an error on one partition or several, never groups split in two.
#[test]
fn a_false_sort_declaration_fails_complete_groups() {
    use parquet::file::metadata::SortingColumn;
    let n = 2_000i64;
    let keys = (0..n).map(|i| match i {
        700 => 701,
        701 => 700,
        i => i,
    });
    let batch = RecordBatch::try_from_iter([
        (
            "o",
            Arc::new(Int64Array::from_iter_values(keys.map(|k| k * 1_000))) as ArrayRef,
        ),
        ("v", Arc::new(Int64Array::from_iter_values(0..n))),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(500))
        .set_sorting_columns(Some(vec![SortingColumn {
            column_idx: 0,
            descending: false,
            nulls_first: false,
        }]))
        .build();
    write_parquet_with(&path, &batch, props);
    runtime().block_on(async {
        for threads in [1, 2, 4] {
            let sql = "select o, count(*), sum(v) from t group by o";
            let err = complete_error(&path, threads, sql).await;
            assert!(
                err.contains("t.parquet") && err.contains("column o") && err.contains("sorted"),
                "{threads}: {err}"
            );
        }
    });
}

/// Row groups whose statistics say they follow one another while one holds a value past
/// its stated bound (one before the last, or the last): the groups completed block by
/// block stop with an error naming the file and column, never a group emitted twice or a
/// row lost; so do they where a row group holds a null its statistics do not count. A
/// clustered key holding a null is not completed block by block (its null group may lie
/// anywhere), and is aggregated right.
#[test]
fn clustered_blocks_that_break_their_statistics_fail() {
    // The first row group's greatest value, written in the footer's statistics only, is
    // replaced there by a smaller one; its rows are not in order, and 3,000, complete
    // before the row past the stated bound, comes again after it.
    const GREATEST: i64 = 0x0102_0304_0506_0708;
    const STATED: i64 = 0x0000_0100_0000_0000;
    let first = [3_000, 5_000, GREATEST, 3_000, 4_000, 5_000];
    let second = [GREATEST + 9_000, GREATEST + 7_000];
    let keys: Vec<i64> = first.iter().chain(&second).copied().collect();
    let n = keys.len() as i64;
    let batch = RecordBatch::try_from_iter([
        ("o", Arc::new(Int64Array::from(keys.clone())) as ArrayRef),
        ("v", Arc::new(Int64Array::from_iter_values(0..n))),
    ])
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.parquet");
    let lens = [first.len(), second.len()];
    write_row_groups(&path, &batch, &lens, Some(props_chunk()));
    state_in_footer(&path, GREATEST, STATED);
    let sql = "select o, count(*), sum(v) from t group by o";
    runtime().block_on(async {
        let err = complete_error(&path, 1, sql).await;
        assert!(
            err.contains("t.parquet") && err.contains("column o") && err.contains("bounds"),
            "{err}"
        );
    });
    // The last row group's greatest value stated smaller: its greatest row lies past
    // the last block.
    write_row_groups(&path, &batch, &lens, Some(props_chunk()));
    state_in_footer(&path, GREATEST + 9_000, GREATEST + 8_000);
    runtime().block_on(async {
        let err = complete_error(&path, 1, sql).await;
        assert!(
            err.contains("column o holds") && err.contains("bounds"),
            "{err}"
        );
    });
    // A null in a row group whose statistics state none: the clustered key (too wide to
    // index) is completed block by block and meets the null, an error naming the column.
    let wide = |k: i64| Some(k * STATED);
    let ordered = RecordBatch::try_from_iter([
        (
            "o",
            Arc::new(Int64Array::from(vec![
                wide(1),
                wide(2),
                None,
                wide(3),
                wide(5),
                wide(6),
            ])) as ArrayRef,
        ),
        ("v", Arc::new(Int64Array::from_iter_values(0..6))),
    ])
    .expect("batch");
    write_row_groups(&path, &ordered, &[4, 2], Some(props_chunk()));
    nulls_in_footer(&path, 0);
    runtime().block_on(async {
        let err = complete_error(&path, 1, sql).await;
        assert!(
            err.contains("t.parquet") && err.contains("column o holds a null"),
            "{err}"
        );
    });
    // The same keys with a null, statistics true: not complete, and right.
    let with_null = RecordBatch::try_from_iter([
        (
            "o",
            Arc::new(Int64Array::from_iter(
                keys.iter().enumerate().map(|(i, &k)| (i != 2).then_some(k)),
            )) as ArrayRef,
        ),
        ("v", Arc::new(Int64Array::from_iter_values(0..n))),
    ])
    .expect("batch");
    write_row_groups(&path, &with_null, &lens, None);
    let reference = SessionContext::new();
    register_in_memory(&reference, "t", &with_null);
    runtime().block_on(async {
        let ctx = session(1);
        let table = SiftTable::open(&path.to_string_lossy()).expect("open");
        ctx.register_table("t", Arc::new(table)).expect("register");
        assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await);
        let (_, text) = executed_plan(&ctx, sql).await;
        assert!(text.contains("SiftAggregate: mode=partial"), "{text}");
    });
}

/// Chunk statistics only (no page index), without dictionaries.
fn props_chunk() -> parquet::file::properties::WriterProperties {
    parquet::file::properties::WriterProperties::builder()
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
        .set_dictionary_enabled(false)
        .build()
}

/// Rewrites the footer of the Parquet file at `path` so that the statistics of every
/// chunk of its first column (an `Int64` column) state `nulls` nulls, their bounds kept and
/// the data untouched.
fn nulls_in_footer(path: &Path, nulls: u64) {
    use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
    use parquet::file::statistics::Statistics;
    let file = std::fs::File::open(path).expect("open parquet");
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .expect("footer");
    let restated = |c: &parquet::file::metadata::ColumnChunkMetaData| match c.statistics() {
        Some(Statistics::Int64(s)) => {
            let stats = Statistics::int64(
                s.min_opt().copied(),
                s.max_opt().copied(),
                None,
                Some(nulls),
                false,
            );
            c.clone()
                .into_builder()
                .set_statistics(stats)
                .build()
                .expect("chunk")
        }
        _ => panic!("the first column is an Int64 column with statistics"),
    };
    let row_groups = (metadata.row_groups().iter())
        .map(|rg| {
            let mut columns = rg.columns().to_vec();
            columns[0] = restated(&columns[0]);
            (rg.clone().into_builder())
                .set_column_metadata(columns)
                .build()
                .expect("row group")
        })
        .collect();
    let metadata = metadata.into_builder().set_row_groups(row_groups).build();
    let mut bytes = std::fs::read(path).expect("read parquet");
    let tail = bytes.len() - 8;
    let len = u32::from_le_bytes(bytes[tail..tail + 4].try_into().expect("len"));
    bytes.truncate(tail - len as usize);
    ParquetMetaDataWriter::new(&mut bytes, &metadata)
        .finish()
        .expect("write footer");
    std::fs::write(path, &bytes).expect("write parquet");
}

/// Replaces every 8-byte little-endian `from` in the footer of the Parquet file at `path`
/// (its statistics, with the file's data untouched) by `to`.
fn state_in_footer(path: &Path, from: i64, to: i64) {
    let mut bytes = std::fs::read(path).expect("read parquet");
    let tail = bytes.len() - 8;
    let len = u32::from_le_bytes(bytes[tail..tail + 4].try_into().expect("len"));
    let (from, to) = (from.to_le_bytes(), to.to_le_bytes());
    let mut replaced = 0;
    for at in tail - len as usize..tail {
        if bytes[at..at + 8] == from {
            bytes[at..at + 8].copy_from_slice(&to);
            replaced += 1;
        }
    }
    assert!(replaced > 0, "the footer holds the value");
    std::fs::write(path, &bytes).expect("write parquet");
}

/// A source that is itself filtered by a smaller table's keys collects its keys through
/// that filter: `o`'s own filter keeps half its rows, too many to filter `l` by, but those
/// of the segment's customers are a tenth.
#[test]
fn join_filters_chain_through_a_filtered_source() {
    let c = RecordBatch::try_from_iter([
        (
            "ck",
            Arc::new(Int64Array::from_iter_values(0..1_000)) as ArrayRef,
        ),
        (
            "seg",
            Arc::new(Int32Array::from_iter_values((0..1_000).map(|i| i % 10))),
        ),
    ])
    .expect("c");
    let o = RecordBatch::try_from_iter([
        (
            "ok",
            Arc::new(Int64Array::from_iter_values(0..40_000)) as ArrayRef,
        ),
        (
            "ock",
            Arc::new(Int64Array::from_iter_values((0..40_000).map(|i| i % 1_000))),
        ),
        (
            "od",
            Arc::new(Int32Array::from_iter_values((0..40_000).map(|i| i % 2))),
        ),
    ])
    .expect("o");
    let n = 160_000i64;
    let l = RecordBatch::try_from_iter([
        (
            "lok",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 4))) as ArrayRef,
        ),
        (
            "v",
            Arc::new(Int32Array::from_iter_values((0..n).map(|i| (i % 7) as i32))),
        ),
    ])
    .expect("l");
    let sql = "select count(*), sum(l.v) from c, o, l \
               where c.ck = o.ock and o.ok = l.lok and c.seg = 0 and o.od = 0";
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let tables = [("c", &c), ("o", &o), ("l", &l)];
        let (ctx, reference) = join_filter_sessions(dir.path(), &tables).await;
        assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await);
        let (plan, text) = executed_plan(&ctx, sql).await;
        let l_scan = text
            .lines()
            .find(|x| x.contains("l.sift"))
            .expect("l's scan");
        assert!(
            l_scan.contains("lok in keys of") && l_scan.contains("and ock in keys of"),
            "{text}"
        );
        let counters = scan_counters(&plan);
        let l_counters = (counters.iter())
            .find(|m| m.get("rows_scanned") == Some(&(n as usize)))
            .expect("l's counters");
        // 4,000 orders of 40,000 pass: 16,000 lineitems, and the Bloom filter's few false
        // positives.
        let matched = l_counters["rows_matched"];
        assert!(
            (16_000..18_000).contains(&matched),
            "{l_counters:?}\n{text}"
        );
    });
}

/// A table restricted only by another's join filter is a source too, so filters follow a
/// chain of joins (r's filter restricts n, whose keys restrict s, whose keys restrict f);
/// and a scan with a narrow filter leaves out a wide one it would also get.
#[test]
fn join_filters_follow_chains_and_leave_wide_ones_out() {
    let ints = |name: &'static str, v: Vec<i64>| (name, Arc::new(Int64Array::from(v)) as ArrayRef);
    let table = |cols: Vec<(&'static str, ArrayRef)>| RecordBatch::try_from_iter(cols).expect("t");
    let r = table(vec![
        ints("rk", (0..5).collect()),
        ints("rname", (0..5).collect()),
    ]);
    let n = table(vec![
        ints("nk", (0..25).collect()),
        ints("nrk", (0..25).map(|i| i % 5).collect()),
    ]);
    let s = table(vec![
        ints("sk", (0..2_000).collect()),
        ints("snk", (0..2_000).map(|i| i % 25).collect()),
    ]);
    let p = table(vec![
        ints("pk", (0..10_000).collect()),
        ints("ptype", (0..10_000).map(|i| i % 200).collect()),
    ]);
    let m = 40_000i64;
    let f = table(vec![
        ints("fsk", (0..m).map(|i| i * 7 % 2_000).collect()),
        ints("fpk", (0..m).map(|i| i * 13 % 10_000).collect()),
    ]);
    let chain = "select count(*) from r, n, s, f \
                 where r.rk = n.nrk and n.nk = s.snk and s.sk = f.fsk and r.rname = 0";
    let both = "select count(*) from r, n, s, f, p where r.rk = n.nrk and n.nk = s.snk \
                and s.sk = f.fsk and f.fpk = p.pk and r.rname = 0 and p.ptype = 0";
    let narrow = "select count(*) from f, p where f.fpk = p.pk and p.ptype = 0";
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let tables = [("r", &r), ("n", &n), ("s", &s), ("p", &p), ("f", &f)];
        let (ctx, reference) = join_filter_sessions(dir.path(), &tables).await;
        // f's scan: its plan line, and its (join filters taken, rows passed).
        let f_scan = |sql: &'static str| {
            let (ctx, reference) = (&ctx, &reference);
            async move {
                assert_eq!(rows(ctx, sql).await, rows(reference, sql).await, "{sql}");
                let (plan, text) = executed_plan(ctx, sql).await;
                let line = text
                    .lines()
                    .find(|x| x.contains("f.sift"))
                    .expect("f")
                    .to_string();
                let counters = scan_counters(&plan);
                let c = (counters.iter())
                    .find(|c| c.get("rows_scanned") == Some(&(m as usize)))
                    .expect("f's counters");
                (line, c["join_filters"], c["rows_matched"])
            }
        };
        // A fifth of s's suppliers are in the region's nations: 8,000 of f's rows.
        let (line, taken, matched) = f_scan(chain).await;
        assert!(
            line.contains("fsk in keys of") && line.contains("snk in keys of"),
            "{line}"
        );
        assert!(
            taken > 0 && (8_000..8_800).contains(&matched),
            "{line}: {taken} {matched}"
        );
        // With p's 0.5 % of parts as well, s's fifth is not taken.
        let (line, taken_both, matched) = f_scan(both).await;
        assert!(
            line.contains("fsk in keys of") && line.contains("fpk in keys of"),
            "{line}"
        );
        let (_, taken_narrow, matched_narrow) = f_scan(narrow).await;
        assert_eq!(
            (taken_both, matched),
            (taken_narrow, matched_narrow),
            "{line}"
        );
    });
}

/// An aggregate that a query holds twice (a common table expression read by a join and by
/// a subquery, or joined to itself) is computed once: the same rows as DataFusion in
/// memory, on a Sift file and on Parquet, on one and two threads, with the table scanned
/// once (twice with `sift.shared_subplans` off); the physical plan run a second time
/// computes it again. Aggregates that differ, or that call a volatile function, are not
/// shared.
#[test]
fn repeated_aggregates_are_computed_once() {
    let f = files();
    let dir = tempfile::tempdir().expect("tempdir");
    let dim_path = dir.path().join("dim.sift");
    let dim = RecordBatch::try_from_iter([
        (
            "dk",
            Arc::new(Int32Array::from_iter_values(0..50)) as ArrayRef,
        ),
        (
            "name",
            Arc::new(StringArray::from_iter_values(
                (0..50).map(|i| format!("n{i}")),
            )),
        ),
    ])
    .expect("dim");
    write_sift(&dim_path, &dim, 1_000);
    let shared = [
        // TPC-H Q15's shape: the join's dynamic filter reaches one copy's scan.
        "with r as (select k, sum(p) total from t where d < date '1992-03-01' group by k) \
         select name, total from dim join r on dk = k \
         where total = (select max(total) from r)",
        "with r as (select k, sum(x) sx from t where id > 100 group by k) \
         select a.k, a.sx, b.sx from r a join r b on a.k = b.k + 1",
        "with r as (select s, count(*) c from t where k < 10 group by s) \
         select * from r where c > 20 union all select * from r where c < 5",
    ];
    let not_shared = [
        "select (select sum(x) from t where k = 1) a, (select sum(x) from t where k = 2) b",
        // Filters on two different scalar subqueries, which print alike until they run.
        "select a.k, a.sx, b.sx \
         from (select k, sum(x) sx from t where x > (select avg(x) from t) group by k) a \
         join (select k, sum(x) sx from t where x > (select max(x) - 20 from t) group by k) b \
         on a.k = b.k",
        // Each side keeps only the aggregate it reads: two different aggregates.
        "with r as (select k, sum(x) sx, count(*) c from t where id > 100 group by k) \
         select a.k, a.sx, b.c from r a join r b on a.k = b.k + 1",
        "with r as (select k, sum(x * random()) v from t group by k) \
         select count(*) from r a join r b on a.k = b.k where a.v > b.v",
    ];
    let reference = reference();
    register_in_memory(&reference, "dim", &dim);
    let rt = runtime();
    rt.block_on(async {
        for path in [&f.sift, &f.parquet] {
            for threads in [1, 2] {
                let ctx = session(threads);
                let table = SiftTable::open(&path.to_string_lossy()).expect("open");
                ctx.register_table("t", Arc::new(table)).expect("register");
                let dim_table = SiftTable::open(&dim_path.to_string_lossy()).expect("open");
                ctx.register_table("dim", Arc::new(dim_table))
                    .expect("register");
                let case =
                    |sql: &str| format!("{sql} on {} with {threads} threads", path.display());
                // Rows of `t` scanned by an executed plan (`dim` has 50).
                let t_rows = |plan: &Arc<dyn ExecutionPlan>| -> usize {
                    scan_counters(plan)
                        .iter()
                        .map(|c| c.get("rows_scanned").copied().unwrap_or(0))
                        .filter(|&n| n != 50)
                        .sum()
                };
                let mut once = Vec::new();
                for sql in shared {
                    let want = rows(&reference, sql).await;
                    assert_eq!(rows(&ctx, sql).await, want, "{}", case(sql));
                    let (plan, text) = executed_plan(&ctx, sql).await;
                    assert!(
                        text.contains("SharedExec: computed once for 2 readers"),
                        "{text}"
                    );
                    assert!(t_rows(&plan) > 0, "{}\n{text}", case(sql));
                    once.push(t_rows(&plan));
                    // The same plan again (one thread: a repartition runs once): each
                    // reader reads the subplan computed anew.
                    if threads > 1 {
                        continue;
                    }
                    let again = datafusion::physical_plan::collect(plan, ctx.task_ctx())
                        .await
                        .expect("run again");
                    assert_eq!(sorted_rows(&again), want, "{}", case(sql));
                }
                for sql in not_shared {
                    let (_, text) = executed_plan(&ctx, sql).await;
                    assert!(!text.contains("SharedExec"), "{}\n{text}", case(sql));
                }
                for sql in &not_shared[..2] {
                    assert_eq!(
                        rows(&ctx, sql).await,
                        rows(&reference, sql).await,
                        "{}",
                        case(sql)
                    );
                }
                ctx.sql("set sift.shared_subplans = false")
                    .await
                    .expect("set");
                for (sql, once) in shared.into_iter().zip(once) {
                    assert_eq!(
                        rows(&ctx, sql).await,
                        rows(&reference, sql).await,
                        "{}",
                        case(sql)
                    );
                    let (plan, text) = executed_plan(&ctx, sql).await;
                    assert!(!text.contains("SharedExec"), "{text}");
                    assert_eq!(t_rows(&plan), 2 * once, "{}\n{text}", case(sql));
                }
            }
        }
    });
}

/// A memory pool that refuses the batches of shared subplans (and nothing else).
#[derive(Debug, Default)]
struct NoRoomToShare(datafusion::execution::memory_pool::UnboundedMemoryPool);

impl std::fmt::Display for NoRoomToShare {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "no room to share")
    }
}

impl datafusion::execution::memory_pool::MemoryPool for NoRoomToShare {
    fn name(&self) -> &str {
        "no room to share"
    }

    fn grow(&self, r: &datafusion::execution::memory_pool::MemoryReservation, n: usize) {
        self.0.grow(r, n);
    }

    fn shrink(&self, r: &datafusion::execution::memory_pool::MemoryReservation, n: usize) {
        self.0.shrink(r, n);
    }

    fn try_grow(
        &self,
        r: &datafusion::execution::memory_pool::MemoryReservation,
        n: usize,
    ) -> datafusion::error::Result<()> {
        if r.consumer().name().starts_with("SharedExec") {
            return Err(datafusion::error::DataFusionError::ResourcesExhausted(
                "no room".to_string(),
            ));
        }
        self.0.try_grow(r, n)
    }

    fn reserved(&self) -> usize {
        self.0.reserved()
    }
}

/// Where the session's memory pool has no room for a shared subplan's batches, each
/// reader computes it: the same rows, the table scanned twice.
#[test]
fn shared_subplans_without_memory_are_computed_by_each_reader() {
    let f = files();
    let sql = "with r as (select k, sum(x) sx from t where id > 100 group by k) \
               select a.k, a.sx, b.sx from r a join r b on a.k = b.k + 1";
    let rt = runtime();
    rt.block_on(async {
        let reference = reference();
        let state =
            datafusion::execution::SessionStateBuilder::new_from_existing(session(1).state())
                .with_runtime_env(Arc::new(
                    datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
                        .with_memory_pool(Arc::new(NoRoomToShare::default()))
                        .build()
                        .expect("runtime env"),
                ))
                .build();
        let ctx = SessionContext::new_with_state(state);
        let table = SiftTable::open(&f.sift.to_string_lossy()).expect("open");
        ctx.register_table("t", Arc::new(table)).expect("register");
        assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await);
        let (plan, text) = executed_plan(&ctx, sql).await;
        assert!(text.contains("SharedExec"), "{text}");
        assert_eq!(
            summed_scan_counters(&plan)["rows_scanned"],
            2 * ROWS,
            "{text}"
        );
    });
}

/// A scan below the build side of one join and the probe side of another (TPC-H Q18's
/// orders, below its join with lineitem and the semi join with the large orders) waits
/// for the second join's filter before reading: on two threads DataFusion starts the
/// build side's partitions at once, and the scan read every order before the filter of
/// the few large ones was filled in, so that lineitem's scan then got every key too.
#[test]
fn scans_wait_for_the_build_sides_of_joins_above() {
    let (n, per) = (20_000i64, 4i64);
    let orders = RecordBatch::try_from_iter([
        (
            "okey",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "total",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 3 % 1000))),
        ),
    ])
    .expect("orders");
    // Every order has `per` lines; those of every 1,000th order are large.
    let lines = RecordBatch::try_from_iter([
        (
            "lkey",
            Arc::new(Int64Array::from_iter_values((0..n * per).map(|i| i / per))) as ArrayRef,
        ),
        (
            "q",
            Arc::new(Int64Array::from_iter_values(
                (0..n * per).map(|i| if (i / per) % 1000 == 0 { 100 } else { 1 }),
            )),
        ),
    ])
    .expect("lines");
    let sql = "select okey, total, sum(q) from orders join lines on okey = lkey \
               where okey in (select lkey from lines group by lkey having sum(q) > 300) \
               group by okey, total";
    let large = (n / 1000) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let (ctx, reference) = (session(2), SessionContext::new());
        register_both(&ctx, &reference, dir.path(), "orders", &orders, 2_000);
        register_both(&ctx, &reference, dir.path(), "lines", &lines, 8_000);
        for _ in 0..3 {
            assert_eq!(rows(&ctx, sql).await, rows(&reference, sql).await);
            let (plan, text) = executed_plan(&ctx, sql).await;
            let scan = text
                .lines()
                .find(|l| l.contains("orders.sift"))
                .expect("scan");
            assert!(scan.contains("after_builds"), "{text}");
            let counters = scan_counters(&plan);
            // Orders' scan passes the large orders alone, and so the scan of lines below
            // the join with them passes their lines alone (the subquery's reads all).
            let mut matched: Vec<usize> = counters.iter().map(|m| m["rows_matched"]).collect();
            matched.sort_unstable();
            let all = (n * per) as usize;
            let want = vec![large, large * per as usize, all];
            assert_eq!(matched, want, "{text}\n{counters:?}");
        }
        // No large order: the semi join's empty build side still completes its filter.
        let none = sql.replace("> 300", "> 100000");
        assert_eq!(rows(&ctx, &none).await, rows(&reference, &none).await);
    });
}
