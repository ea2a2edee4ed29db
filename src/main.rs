use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use sim::bench::{self, BenchOptions};
use sim::case::Backend;
use sim::cuda::{GpuOptions, Variant};
use sim::real::Precision;
use sim::run::{self, RunOptions};

/// Case-driven CFD simulator.
#[derive(Parser)]
#[command(name = "sim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a case, or continue one from a checkpoint.
    Run {
        /// Case file (YAML). With --restart it may change only run controls.
        case: Option<PathBuf>,
        /// Checkpoint file, run directory (newest checkpoint) or `latest` (with CASE).
        #[arg(long)]
        restart: Option<String>,
        /// Output directory (default: output.dir of the case, else out/<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum)]
        backend: Option<Backend>,
        #[arg(long, value_enum)]
        precision: Option<Precision>,
        /// Worker threads (default: the case's `threads`, 0 = all).
        #[arg(long)]
        threads: Option<usize>,
        /// Stop after this many steps.
        #[arg(long)]
        steps: Option<u64>,
        /// Replace the results of an earlier run in the output directory.
        #[arg(long)]
        overwrite: bool,
        /// No progress bar, no log lines.
        #[arg(long)]
        quiet: bool,
    },
    /// Validate a case and print what a run would do.
    Check {
        /// Case file (YAML). With --restart it may change only run controls.
        #[arg(required_unless_present = "restart")]
        case: Option<PathBuf>,
        /// Check the continuation from this checkpoint, run directory (newest checkpoint) or
        /// `latest` (with CASE): its attributes and shapes, no array data.
        #[arg(long)]
        restart: Option<String>,
        /// Output directory the run would take (as `sim run --out`).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum)]
        precision: Option<Precision>,
        #[arg(long)]
        steps: Option<u64>,
    },
    /// CPU threads and CUDA devices of this machine.
    Info,
    /// Generate a point cloud for the meshfree solver (`sim mesh naca0012 ...`).
    Mesh {
        /// naca0012 (NACA 00xx with --thickness)
        body: String,
        /// ogrid (structured O-grid, 160 x 60 reproduces the reference cloud) or quadtree
        /// (cells refined towards the body)
        #[arg(long = "type", default_value = "ogrid")]
        kind: String,
        /// About this many points
        #[arg(long)]
        points: Option<usize>,
        /// Points per ring (O-grid)
        #[arg(long)]
        ni: Option<usize>,
        /// Rings (O-grid)
        #[arg(long)]
        nj: Option<usize>,
        /// Far-field radius in chords
        #[arg(long, default_value_t = 10.0)]
        radius: f64,
        /// Distance from the wall to the first ring at mid-chord (O-grid) [default: 2e-3, or
        /// the smallest from which the rings reach the far field where that is more]
        #[arg(long)]
        first_spacing: Option<f64>,
        #[arg(long, default_value_t = 0.12)]
        thickness: f64,
        /// scaled | modified trailing-edge closure
        #[arg(long, default_value = "scaled")]
        closure: String,
        /// sim | legacy file format
        #[arg(long, default_value = "sim")]
        format: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// Time a case on the CUDA device for a grid of block shapes; keep the fastest per
    /// device, solver, scheme, precision and variant for runs that set no gpu.block.
    Tune {
        case: PathBuf,
        #[arg(long, value_enum)]
        precision: Option<Precision>,
        /// Minimum timed seconds per block shape.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Block shapes to time, e.g. 16x8,32x4 (default: widths 8-1024 x heights 1-32).
        #[arg(long)]
        blocks: Option<String>,
        /// Time one variant only (default: both).
        #[arg(long, value_enum)]
        variant: Option<Variant>,
    },
    /// Time a solver's steps next to a COPY kernel: effective bandwidth, Mcells/s, RDP.
    Bench {
        /// copy | tridiag | heat1d | heat2d | cavity | lskum | shallow_water (any solver of the registry)
        name: String,
        /// Problem size: nodes or cells per side (2D), nodes (1D) or points of a generated
        /// cloud; default 4096 (2D), 2^24 (1D), 100 000 (points), 2048 (shallow_water).
        #[arg(long, alias = "points")]
        size: Option<usize>,
        /// Scheme of a solver that has several (shallow_water: fbl | ctcs | cdklm16 | kp07).
        #[arg(long)]
        scheme: Option<String>,
        #[arg(long, value_enum, default_value_t = Precision::F64)]
        precision: Precision,
        #[arg(long)]
        threads: Option<usize>,
        /// Minimum timed seconds per kernel.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Rounds of the solver (and PEAK), each between two COPY runs: the figures of the
        /// median round by the ratio to COPY, and each figure's spread over the rounds.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..10_000))]
        rounds: u64,
        #[arg(long, value_enum, default_value_t = Backend::Cpu)]
        backend: Backend,
        /// CUDA kernel variant [default: l2].
        #[arg(long, value_enum)]
        variant: Option<Variant>,
        /// lskum on CUDA: the flux residual as one kernel (fused) or four (split) [default: fused].
        #[arg(long, value_enum)]
        flux: Option<sim::cuda::Flux>,
        /// CUDA block shape BX,BY (default: the one `sim tune` found best, else 512,1).
        #[arg(long, value_delimiter = ',')]
        block: Option<Vec<u32>>,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
        /// CPU: steps per sweep of the temporally blocked stencils: auto, off or a number [default: auto].
        #[arg(long)]
        temporal_block: Option<sim::cpu::TemporalBlock>,
        /// tridiag: systems per solve (thomas; default: as many as --size).
        #[arg(long)]
        batch: Option<usize>,
        /// tridiag: thomas (batched systems) or spike (one system).
        #[arg(long)]
        solver: Option<String>,
        /// tridiag on cuda: also solve the batch from host memory split between the CPU and
        /// the device, these shares (0 to 1, comma-separated) of the systems on the CPU.
        #[arg(long, value_delimiter = ',')]
        cpu_share: Option<Vec<f64>>,
        /// Sample the GPU's power with nvidia-smi while the solver runs (--backend cuda).
        #[arg(long)]
        power: bool,
        /// lskum: the order the solver holds the points in (default rcm).
        #[arg(long, value_enum)]
        renumber: Option<sim::solvers::lskum::Renumber>,
        /// lskum on the CPU: exp, ln and erf of the flux residual exact (libm) or fast
        /// (within 1 ulp, vectorised).
        #[arg(long, value_enum, default_value_t = sim::cpu::Math::Exact)]
        math: sim::cpu::Math,
        /// On the CPU: compute with subnormal numbers (keep, IEEE) or flush them to zero.
        #[arg(long, value_enum, default_value_t = sim::cpu::Subnormals::Keep)]
        subnormals: sim::cpu::Subnormals,
        /// With --backend cuda: compile the kernels with NVRTC's fast math, as `gpu.fast_math:
        /// true` in a case (approximate division and square root, FMA contraction, subnormals
        /// flushed; the results no longer equal the CPU's bit for bit).
        #[arg(long)]
        fast_math: bool,
    },
    /// Walk a checkpoint's HDF5 structures (run in a child process before a restart).
    #[command(name = sim::io::probe::COMMAND, hide = true)]
    WalkCheckpoint { path: PathBuf },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run_opts = run_options(&cli.command);
    let program = std::env::current_exe().ok();
    // Under an MPI launcher (feature `mpi`): MPI runs until main returns. A restart's
    // checkpoint is walked first (see below), while a child process is still allowed.
    #[cfg(feature = "mpi")]
    let universe = run_opts.as_ref().filter(|_| sim::parallel::mpi::launched()).and_then(|opts| {
        if let (Some(program), Some(path)) = (&program, run::plan::restart_checkpoint(opts)) {
            sim::io::probe::walk_early(program, &path);
        }
        sim::parallel::mpi::Universe::start()
    });
    #[cfg(feature = "mpi")]
    let procs = universe.as_ref().map(|u| u as &dyn sim::parallel::Processes);
    #[cfg(not(feature = "mpi"))]
    let procs: Option<&dyn sim::parallel::Processes> = None;
    #[cfg(not(feature = "mpi"))]
    if let Some(n) = std::env::var("OMPI_COMM_WORLD_SIZE").ok().filter(|n| n != "1") {
        // Each process would run the whole case into the same directory.
        sim::say!("error: started by mpirun with {n} processes, but this sim was built without the mpi feature \
                   (cargo build --release --features mpi)");
        return ExitCode::from(2);
    }
    // A restart walks its checkpoint in a child process first (a damaged file can crash
    // HDF5); under MPI with several ranks, before MPI started, as the launcher may not allow
    // children of a rank.
    if procs.is_none_or(|p| p.size() == 1)
        && let Some(program) = program
    {
        sim::io::probe::enable(program);
    }
    // The other commands run as one process. Under a launcher of several, rank 0 alone runs
    // them (the others end at once: one that failed first would have the launcher kill rank 0
    // before it told why): `sim check` checks the case's decomposition over them, the commands
    // that measure or write refuse.
    let launched = sim::parallel::launcher().filter(|&(_, size)| size > 1);
    if let Some((rank, size)) = launched
        && !matches!(cli.command, Command::Run { .. } | Command::WalkCheckpoint { .. })
    {
        if rank != 0 {
            return ExitCode::SUCCESS;
        }
        let name = match &cli.command {
            Command::Bench { .. } => Some("bench"),
            Command::Tune { .. } => Some("tune"),
            Command::Mesh { .. } => Some("mesh"),
            _ => None,
        };
        if let Some(name) = name {
            return fail(&sim::SimError::Input(format!(
                "sim {name} runs as one process, and the launcher started {size}: start it without mpirun"
            )));
        }
    }
    let result = match cli.command {
        Command::WalkCheckpoint { path } => {
            sim::io::probe::no_core_dump();
            sim::io::checkpoint::walk(&path)
        }
        Command::Run { .. } => {
            let Some(opts) = run_opts else { unreachable!("the options of sim run") };
            let rank0 = procs.is_none_or(|p| p.rank() == 0);
            let run = || run::run_on(&opts, procs);
            #[cfg(feature = "mpi")]
            let summary = match &universe {
                Some(u) => u.abort_on_panic(run),
                None => run(),
            };
            #[cfg(not(feature = "mpi"))]
            let summary = run();
            summary.map(|summary| {
                if !opts.quiet && rank0 {
                    print_out(&format!("{}\n", run::summary_text(&summary)));
                }
            })
        }
        Command::Check { case, restart, out, precision, steps } => {
            let opts = RunOptions { case, restart, out, precision, steps, ..Default::default() };
            run::check_on(&opts, launched.map(|(_, size)| size)).map(|s| print_out(&s))
        }
        Command::Tune { case, precision, seconds, blocks, variant } => {
            let blocks = blocks.as_deref().map(sim::tune::parse_blocks).transpose();
            blocks.and_then(|blocks| {
                let o = sim::tune::TuneOptions { case, precision, seconds, blocks, variant };
                sim::tune::tune(&o).map(|t| print_out(&t))
            })
        }
        Command::Info => {
            print_out(&sim::info::report());
            Ok(())
        }
        Command::Mesh { body, kind, points, ni, nj, radius, first_spacing, thickness, closure, format, out } => {
            if body != "naca0012" {
                Err(sim::SimError::Input(format!("sim mesh {body}: only naca0012 is available")))
            } else {
                let o = sim::mesh::MeshOptions {
                    kind, points, ni, nj, radius, first_spacing, thickness, closure, format, out,
                };
                sim::mesh::generate(&o).map(|s| print_out(&s))
            }
        }
        Command::Bench {
            name,
            size,
            scheme,
            precision,
            threads,
            seconds,
            backend,
            variant,
            flux,
            block,
            json,
            temporal_block,
            batch,
            solver,
            cpu_share,
            renumber,
            math,
            subnormals,
            fast_math,
            power,
            rounds,
        } => {
            let backend = match backend {
                Backend::Auto if sim::cuda::Gpu::available() => Backend::Cuda,
                Backend::Auto => Backend::Cpu,
                b => b,
            };
            // Options of the other back end would be ignored.
            let for_cuda: Vec<&str> = [(variant.is_some(), "--variant"), (flux.is_some(), "--flux"), (block.is_some(), "--block")]
                .into_iter()
                .filter_map(|(given, name)| given.then_some(name))
                .collect();
            let other_back_end = match backend {
                Backend::Cpu if !for_cuda.is_empty() => {
                    let verb = if for_cuda.len() == 1 { "sets" } else { "set" };
                    Some(format!("{} {verb} up the CUDA kernels; this bench runs on the CPU (--backend cuda)", for_cuda.join(", ")))
                }
                Backend::Cuda if temporal_block.is_some() => {
                    Some("--temporal-block sets up the CPU kernels; this bench runs on CUDA (--backend cpu)".into())
                }
                // Solvers whose CPU kernels step one at a time.
                _ if temporal_block.is_some() && matches!(name.as_str(), "lskum" | "tridiag" | "copy") => {
                    Some(format!("--temporal-block: {name} has no temporally blocked kernels (heat, cavity and shallow water have)"))
                }
                // Options that the benchmark's kernels would not use.
                _ if flux.is_some() && name != "lskum" => Some("--flux belongs to sim bench lskum".into()),
                _ if name == "copy" && (variant.is_some() || block.is_some()) => {
                    Some("--variant and --block: sim bench copy runs one kernel in blocks of 512 threads".into())
                }
                _ if name == "tridiag" && variant.is_some() => {
                    Some("--variant: sim bench tridiag has one variant per layout (its JSON names each)".into())
                }
                _ => None,
            };
            match (other_back_end, block.as_deref()) {
                (Some(why), _) => Err(sim::SimError::Input(why)),
                (None, None | Some([_, _])) => {
                    let (variant, flux) = (variant.unwrap_or_default(), flux.unwrap_or_default());
                    let gpu = GpuOptions { variant, block: block.map(|b| [b[0], b[1]]), fast_math, flux };
                    let cpu = sim::cpu::CpuOptions { temporal_block: temporal_block.unwrap_or_default(), math, subnormals };
                    let o = BenchOptions {
                        backend, gpu, cpu, name, size, scheme, precision, threads, seconds, batch, solver, cpu_share, renumber,
                        power, rounds: rounds as usize,
                    };
                    bench::bench(&o).map(|v| {
                        if json {
                            print_out(&format!("{}\n", serde_json::to_string_pretty(&v).expect("json")));
                        } else {
                            print_out(&bench::text(&v));
                        }
                    })
                }
                (None, Some(b)) => Err(sim::SimError::Input(format!("--block {b:?}: give two numbers, BX,BY (e.g. 512,1)"))),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Another rank reported it.
        Err(sim::SimError::Quiet(code)) => ExitCode::from(code as u8),
        // A stop the user asked for, not an error.
        Err(e @ sim::SimError::Interrupted(..)) => {
            sim::say!("{e}");
            ExitCode::from(e.exit_code() as u8)
        }
        Err(e) => fail(&e),
    }
}

/// The exit of a failed command, its message told.
fn fail(e: &sim::SimError) -> ExitCode {
    sim::say!("error: {e}");
    ExitCode::from(e.exit_code() as u8)
}

/// Print to stdout; a reader that went away (`sim info | head -1`) is no error.
fn print_out(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
}

/// The options of `sim run` (None for the other commands).
fn run_options(command: &Command) -> Option<RunOptions> {
    let Command::Run { case, restart, out, backend, precision, threads, steps, overwrite, quiet } = command else {
        return None;
    };
    Some(RunOptions {
        case: case.clone(),
        restart: restart.clone(),
        out: out.clone(),
        backend: *backend,
        precision: *precision,
        threads: *threads,
        steps: *steps,
        overwrite: *overwrite,
        quiet: *quiet,
    })
}
