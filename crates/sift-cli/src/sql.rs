//! `sift sql`: SQL over Sift and Parquet files through DataFusion, with the scans (filters,
//! projections, limits) run by Sift's engine on every core.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, execute_stream};
use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;
use sift_datafusion::{PARQUET_EXTENSIONS, SiftOptions, SiftTable, has_extension, session};
use sift_io::SortKey;

use crate::cat::{CatOutput, OutputFormatParser};
use crate::display::printable_batch;
use crate::io::Stdout;
use crate::scan::{FileSink, Sink, check_out_path};
use crate::table::{fmt_secs, human_count};
use crate::ui::Ui;

/// Run SQL on Sift and Parquet files (DataFusion's SQL; scans by Sift's engine).
///
/// Tables are files named in FROM (`from 'data/lineitem.sift'`; a directory or a glob such
/// as 'data/*.parquet' reads several files as one table, their schemas unified, and the
/// `key=value` directories of a Hive-partitioned tree become columns), names given with
/// --table, or
/// tables made in SQL: `create external table t stored as sift location 'data/t.sift'`.
/// Filters that Sift evaluates exactly (comparisons with literals, BETWEEN, IN, LIKE,
/// IS NULL, AND/OR/NOT) run inside the scan, on the compressed data; --explain shows them
/// in the SiftScan line. Parquet files go through the same scan. Without a query, an
/// interactive prompt starts (statements end with `;`, history in ~/.sift_history).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sift sql \"select l_returnflag, count(*) from 'lineitem.sift' group by 1\"\n  \
    sift sql --table l=lineitem.parquet \"select sum(l_extendedprice) from l where l_quantity < 24\"\n  \
    sift sql --table lineitem=lineitem.sift --explain -f q6.sql\n  \
    sift sql \"select * from 'data/*.sift' where id = 42\" --out found.parquet\n  \
    sift sql --table lineitem=lineitem.sift          # interactive")]
pub struct SqlArgs {
    /// The SQL: one statement, or several separated by `;` (only the last one's rows are
    /// printed). Without it (and without --file), an interactive prompt starts.
    pub query: Option<String>,
    /// Read the SQL from this file instead.
    #[arg(short = 'f', long, value_name = "FILE", conflicts_with = "query")]
    pub file: Option<PathBuf>,
    /// Register a table: NAME=PATH, where PATH is a .sift or .parquet file, a directory of
    /// them, or a glob (repeat for more tables).
    #[arg(short, long = "table", value_name = "NAME=PATH", value_parser = parse_table)]
    pub tables: Vec<(String, String)>,
    /// How rows are printed on stdout: a format, not a file (to write a file, use --out).
    #[arg(short, long, value_name = "FORMAT", default_value = "table",
        value_parser = OutputFormatParser { has_out: true })]
    pub output: CatOutput,
    /// Write the result to the file PATH (.sift, .parquet, .csv, .arrow or .arrows).
    #[arg(long, value_name = "PATH", conflicts_with = "output")]
    pub out: Option<PathBuf>,
    /// Threads (and scan partitions); default: every core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..1025))]
    pub threads: Option<u64>,
    /// Print the plan instead of running the query: the logical plan and the physical plan,
    /// where each SiftScan line shows the filter pushed into Sift's scan.
    #[arg(long)]
    pub explain: bool,
    /// Run the (last) query N times and print its times as JSON on stdout (first run,
    /// best, median, in milliseconds; each run plans and executes) instead of its rows,
    /// with the counters of the last run's Sift scans.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: Option<u64>,
    /// Read .parquet tables given with --table with DataFusion's own Parquet reader
    /// instead of Sift's (to compare the two). Each file is first checked by Sift (its
    /// footer, page headers, page index and Bloom filter headers), since a damaged one
    /// can hold that reader for seconds.
    #[arg(long, value_name = "READER", default_value = "sift")]
    pub parquet_reader: ParquetReader,
    /// With --parquet-reader datafusion: evaluate filters inside DataFusion's Parquet scan
    /// (its `pushdown_filters` option).
    #[arg(long)]
    pub datafusion_pushdown: bool,
    /// Join filters: the keys of a hash join's filtered side, as a Bloom filter or an
    /// exact IN list, tested inside the Sift scans of the other side before their other
    /// columns are decoded (--explain shows them as join_filters). Also `SET
    /// sift.join_filters = false` in SQL.
    #[arg(long, value_name = "ON|OFF", default_value = "on", value_parser = on_off,
        action = clap::ArgAction::Set)]
    pub join_filters: bool,
    /// Aggregates next to the scan: SUM, AVG, COUNT, MIN and MAX over a Sift scan grouped
    /// by its dictionary codes and computed on 64-bit integers when the zone maps prove
    /// nothing overflows (--explain shows them as SiftAggregate); grouped by a key sorted
    /// or clustered (its blocks' statistics in order), completed there with no final phase
    /// (SiftAggregate: mode=complete).
    /// Also `SET sift.scan_aggregates = false` in SQL.
    #[arg(long, value_name = "ON|OFF", default_value = "on", value_parser = on_off,
        action = clap::ArgAction::Set)]
    pub scan_aggregates: bool,
    /// With aggregates next to the scan: ungrouped MIN and MAX of columns take only each
    /// block's smallest and largest selected value from the scan, folded from a Parquet
    /// dictionary page's codes without decoding values (--explain shows extremes_only).
    /// Also `SET sift.scan_extremes = false` in SQL.
    #[arg(long, value_name = "ON|OFF", default_value = "on", value_parser = on_off,
        action = clap::ArgAction::Set)]
    pub scan_extremes: bool,
    /// Shared subplans: an aggregate the query computes more than once (a view or common
    /// table expression read twice, as TPC-H Q15 reads revenue0) computed once for all
    /// its readers (--explain shows SharedExec). Also `SET sift.shared_subplans = false`
    /// in SQL.
    #[arg(long, value_name = "ON|OFF", default_value = "on", value_parser = on_off,
        action = clap::ArgAction::Set)]
    pub shared_subplans: bool,
}

fn on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

/// Which reader scans Parquet tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ParquetReader {
    /// Sift's engine (filters on the encoded pages).
    Sift,
    /// DataFusion's own Parquet reader.
    Datafusion,
}

fn parse_table(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
            Ok((name.trim().to_string(), path.to_string()))
        }
        _ => Err(format!("'{s}' is not NAME=PATH")),
    }
}

pub fn run(args: &SqlArgs, ui: &Ui) -> Result<()> {
    if let Some(out) = &args.out {
        // The input side of the same-file check is not known here; any table file may be
        // read, so only the path's form is checked.
        check_out_path(std::path::Path::new(""), out)?;
    }
    let threads = crate::threads(args.threads);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("cannot start the query threads")?;
    runtime.block_on(async {
        let ctx = session(threads);
        if let Some(o) = ctx
            .state_ref()
            .write()
            .config_mut()
            .options_mut()
            .extensions
            .get_mut::<SiftOptions>()
        {
            o.join_filters = args.join_filters;
            o.scan_aggregates = args.scan_aggregates;
            o.scan_extremes = args.scan_extremes;
            o.shared_subplans = args.shared_subplans;
        }
        if args.parquet_reader == ParquetReader::Datafusion {
            ctx.state_ref()
                .write()
                .config_mut()
                .options_mut()
                .execution
                .parquet
                .pushdown_filters = args.datafusion_pushdown;
        }
        for (name, path) in &args.tables {
            register(&ctx, name, path, args.parquet_reader).await?;
        }
        let text = match (&args.query, &args.file) {
            (Some(q), _) => q.clone(),
            (None, Some(f)) => std::fs::read_to_string(f)
                .with_context(|| format!("cannot read {}", f.display()))?,
            (None, None) => return interactive(&ctx, args).await,
        };
        let statements = split_statements(&text);
        let Some((last, before)) = statements.split_last() else {
            bail!("no SQL statement given");
        };
        for s in before {
            ctx.sql(s)
                .await
                .map_err(|e| sql_error(e, s))?
                .collect()
                .await?;
        }
        run_statement(&ctx, last, args, ui).await
    })
}

/// Registers a --table: a Sift table, or a Parquet table read by DataFusion.
async fn register(
    ctx: &SessionContext,
    name: &str,
    path: &str,
    reader: ParquetReader,
) -> Result<()> {
    let is_parquet = has_extension(path, PARQUET_EXTENSIONS);
    if reader == ParquetReader::Datafusion && is_parquet {
        // DataFusion's reader decodes the Thrift of what it fetches with the `parquet`
        // crate, which a few bytes of a damaged file can hold for seconds: it is given
        // only files whose every Thrift structure Sift has checked.
        if !sift_store::is_url(path) {
            let files = sift_store::resolve(path, &Default::default())
                .with_context(|| format!("table {name}"))?;
            for f in files {
                sift_scan::ParquetFile::open(Path::new(&f.location))
                    .and_then(|file| file.check_all())
                    .with_context(|| format!("table {name}: {}", f.location))?;
            }
        }
        let absolute = std::path::absolute(path)
            .with_context(|| format!("{path}: cannot resolve the path"))?;
        let url = ListingTableUrl::parse(absolute.to_string_lossy())
            .with_context(|| format!("{path}: not a usable path"))?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .infer_schema(&ctx.state())
            .await
            .with_context(|| format!("cannot open {path}"))?;
        ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
        return Ok(());
    }
    let table = SiftTable::open(path).with_context(|| format!("table {name}"))?;
    ctx.register_table(name, Arc::new(table))?;
    Ok(())
}

/// Runs one statement and prints, writes, explains or times its result.
async fn run_statement(ctx: &SessionContext, sql: &str, args: &SqlArgs, ui: &Ui) -> Result<()> {
    let start = Instant::now();
    let df = ctx.sql(sql).await.map_err(|e| sql_error(e, sql))?;
    if args.explain {
        let plan = df.explain(false, false)?.collect().await?;
        return print_explain(&plan);
    }
    if let Some(runs) = args.runs {
        return time_runs(df, runs, start);
    }
    let schema = Arc::new(df.schema().as_arrow().clone());
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await?;
    let order = plan_order(plan.as_ref());
    let mut stream = execute_stream(plan, task)?;
    let mut stdout = Stdout::new();
    let mut sink = match &args.out {
        Some(path) => Sink::File(Box::new(FileSink::create(path, &schema, order)?)),
        None => Sink::Print(crate::cat::Printer::new(
            args.output,
            printable_batch(RecordBatch::new_empty(schema))?.schema(),
            &mut stdout,
        )?),
    };
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        sink.write(batch)?;
    }
    sink.finish()?;
    stdout.flush()?;
    let secs = start.elapsed().as_secs_f64();
    if ui.verbose() && (args.out.is_some() || args.output == CatOutput::None) {
        eprintln!("{} rows in {}", human_count(rows), fmt_secs(secs));
    }
    Ok(())
}

/// The order of the rows `plan` returns, as keys on its output columns (the keys up to
/// the first that is computed): what a file written from them declares. None over
/// several partitions, whose order holds in each and is lost where they are interleaved.
fn plan_order(plan: &dyn ExecutionPlan) -> Vec<SortKey> {
    let ordering = plan.output_ordering();
    let Some(ordering) = ordering.filter(|_| plan.output_partitioning().partition_count() == 1)
    else {
        return Vec::new();
    };
    let schema = plan.schema();
    (ordering.iter())
        .map_while(|key| {
            let column = key.expr.downcast_ref::<Column>()?;
            Some(SortKey {
                column: schema.field(column.index()).name().clone(),
                options: key.options,
            })
        })
        .collect()
}

/// `--runs`: the query planned and executed `runs` times; the first run is the first in
/// this process (files opened by then, page cache as it is). The JSON also holds the
/// counters of the last run's Sift scans.
fn time_runs(df: DataFrame, runs: u64, started: Instant) -> Result<()> {
    // Planning the SQL and opening the tables happened once before, like a prepared
    // statement; every run optimises, plans physically and executes.
    let prepare_ms = started.elapsed().as_secs_f64() * 1e3;
    let handle = tokio::runtime::Handle::current();
    let mut times = Vec::new();
    let mut rows = 0usize;
    let mut scans = serde_json::Map::new();
    for _ in 0..runs {
        let df = df.clone();
        let t = Instant::now();
        let (batches, plan) = tokio::task::block_in_place(|| {
            handle.block_on(async {
                let task = Arc::new(df.task_ctx());
                let plan = df.create_physical_plan().await?;
                let batches = datafusion::physical_plan::collect(Arc::clone(&plan), task).await?;
                Ok::<_, DataFusionError>((batches, plan))
            })
        })?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        rows = batches.iter().map(RecordBatch::num_rows).sum();
        scans = sift_datafusion::summed_scan_counters(&plan)
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect();
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let json = serde_json::json!({
        "prepare_ms": prepare_ms,
        "first_ms": times[0],
        "best_ms": sorted[0],
        "median_ms": sorted[sorted.len() / 2],
        "runs": times,
        "rows": rows,
        "scans": scans,
    });
    println!("{json}");
    Ok(())
}

/// The plan, one line per node: logical plan, then physical plan.
fn print_explain(plan: &[RecordBatch]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for batch in plan {
        let kinds = arrow::compute::cast(batch.column(0), &arrow::datatypes::DataType::Utf8)?;
        let texts = arrow::compute::cast(batch.column(1), &arrow::datatypes::DataType::Utf8)?;
        let kinds = arrow::array::AsArray::as_string::<i32>(&kinds);
        let texts = arrow::array::AsArray::as_string::<i32>(&texts);
        for i in 0..batch.num_rows() {
            writeln!(out, "{}:", kinds.value(i))?;
            for line in texts.value(i).lines() {
                writeln!(out, "  {line}")?;
            }
        }
    }
    Ok(())
}

/// A DataFusion error, with the line and column of the SQL it points at when known.
fn sql_error(e: DataFusionError, sql: &str) -> anyhow::Error {
    anyhow::anyhow!(sift_datafusion::error_message(&e, sql))
}

/// Splits SQL text into statements at `;` outside quotes and comments; empty statements
/// are dropped.
fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    current.push(c);
                }
                '-' if chars.peek() == Some(&'-') => {
                    // A comment runs to the end of the line.
                    for c in chars.by_ref() {
                        if c == '\n' {
                            current.push('\n');
                            break;
                        }
                    }
                }
                ';' => out.push(std::mem::take(&mut current)),
                _ => current.push(c),
            },
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The prompt: statements end with `;`; errors are printed and the prompt goes on.
async fn interactive(ctx: &SessionContext, args: &SqlArgs) -> Result<()> {
    if !std::io::stdin().is_terminal() {
        // Piped input: read it all and run it, without a prompt.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
        for s in split_statements(&text) {
            run_statement(ctx, &s, args, &Ui::new(true)).await?;
        }
        return Ok(());
    }
    let mut editor = rustyline::DefaultEditor::new().context("cannot start the prompt")?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".sift_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    eprintln!("sift sql: statements end with ';'. Ctrl-D quits.");
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "sift> "
        } else {
            "  ... "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                buffer.push_str(&line);
                buffer.push('\n');
                if !line.trim_end().ends_with(';') {
                    continue;
                }
                let _ = editor.add_history_entry(buffer.trim());
                for s in split_statements(&std::mem::take(&mut buffer)) {
                    if let Err(e) = run_statement(ctx, &s, args, &Ui::new(true)).await {
                        eprintln!("error: {}", sift_io::error_message(&e));
                    }
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => buffer.clear(),
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let s = split_statements("select 'a;b'; -- c; d\nselect \"x;\" from t;;");
        assert_eq!(s, vec!["select 'a;b'", "select \"x;\" from t"]);
        assert_eq!(split_statements("  ;  "), Vec::<String>::new());
    }

    #[test]
    fn tables_are_name_equals_path() {
        assert_eq!(
            parse_table("l=data/x.sift"),
            Ok(("l".into(), "data/x.sift".into()))
        );
        assert!(parse_table("data/x.sift").is_err());
        assert!(parse_table("=x").is_err());
    }
}
