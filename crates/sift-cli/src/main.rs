//! `sift`: convert, inspect, print and demo Sift files.
//!
//! This file only wires the command line; each command lives in its own module.

#![forbid(unsafe_code)]

mod bench;
mod bench_store;
mod cat;
mod convert;
mod demo;
mod display;
mod inspect;
mod io;
mod measure;
mod queries;
mod query;
mod readback;
mod scan;
mod sql;
mod table;
mod ui;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::ui::Ui;

/// Decoding allocates and frees block-sized buffers over and over; glibc's allocator hands
/// large ones back to the kernel each time, so every block paid for fresh zeroed pages
/// (most of the decode time in profiles). mimalloc keeps and reuses them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sift: a columnar file format that filters data while it is still compressed.
#[derive(Debug, Parser)]
#[command(
    name = "sift",
    version,
    about,
    long_about = "Sift: a columnar file format that filters data while it is still compressed.\n\n\
        Convert between Sift, Parquet, Arrow IPC (and from CSV), look inside Sift and Parquet \
        files, print their rows, scan them with a filter, query them with SQL, or run an end-to-end demo on generated \
        TPC-H data.",
    after_help = "Examples:\n  \
        sift demo --scale 0.1\n  \
        sift convert lineitem.parquet lineitem.sift\n  \
        sift inspect lineitem.sift --blocks\n  \
        sift cat lineitem.sift --columns l_orderkey,l_comment --limit 10\n  \
        sift sql \"select l_returnflag, count(*) from 'lineitem.sift' group by 1\""
)]
struct Cli {
    /// Hide progress bars and status messages (they are also hidden when stderr is not a
    /// terminal).
    #[arg(short, long, global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Convert(convert::ConvertArgs),
    Inspect(inspect::InspectArgs),
    Cat(cat::CatArgs),
    Demo(demo::DemoArgs),
    Query(query::QueryArgs),
    Scan(scan::ScanArgs),
    Sql(sql::SqlArgs),
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    // A panic the scan catches (the `parquet` crate's decoders on a damaged file) becomes
    // an error naming the file, printed below; the panic's own message would only come
    // first. Every other panic is printed as always.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !sift_scan::catching_panics() {
            report(info);
        }
    }));
    let cli = Cli::parse();
    let ui = Ui::new(cli.quiet);
    // Ctrl-C or `kill` must not leave an output's temporary file behind. Only commands
    // that write files start the signal thread; the others exit as they always would.
    let writes = matches!(
        cli.command,
        Command::Convert(_) | Command::Scan(_) | Command::Sql(_) | Command::Demo(_)
    );
    if writes && let Err(e) = io::remove_temp_files_on_signal() {
        eprintln!("sift: warning: {}", sift_io::error_message(&e));
    }
    let result = match cli.command {
        Command::Convert(args) => convert::run(&args, &ui),
        Command::Inspect(args) => inspect::run(&args, &ui),
        Command::Cat(args) => cat::run(&args, &ui),
        Command::Demo(args) => demo::run(&args, &ui),
        Command::Query(args) => query::run(&args, &ui),
        Command::Scan(args) => scan::run(&args, &ui),
        Command::Sql(args) => sql::run(&args, &ui),
        Command::Bench(args) => bench::run(&args, &ui),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our stdout went away (`sift cat f | head`): not an error.
        Err(_) if io::stdout_closed() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sift: error: {}", sift_io::error_message(&e));
            ExitCode::FAILURE
        }
    }
}

/// A `--threads` option's value, or every core the process may use.
fn threads(option: Option<u64>) -> usize {
    match option {
        Some(n) => usize::try_from(n).unwrap_or(1).max(1),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}
