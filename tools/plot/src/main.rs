//! `ludus-plot`: SVG plots of the result files in `perf-results/`.
//!
//! ```text
//! cargo run -p ludus-plot --release -- [DIR]      # DIR defaults to perf-results
//! ```
//!
//! Reads, from DIR, and writes next to them:
//!
//! - `memory-threads*.json` (scripts/bench.py output of the `memory_threads` bench) →
//!   `memory-threads-scaling.svg`: the ratio ludus median ÷ raw median of the same backend
//!   against the thread count, one line per (backend, same/spread domain, warm/new threads)
//!   and file;
//! - `memory-latency.json` (scripts/memory_workloads.py latency) → `memory-latency-cdf.svg`:
//!   the allocate and free latency CDFs per contender on a log ns axis, with the timer's own
//!   overhead;
//! - `peers.json` (scripts/bench.py peers) → `peers-ratios.svg`: per workload, the ludus
//!   contender's median ÷ each other contender's median, with a reference line at 1.0.
//!
//! A missing input is skipped with a message; a malformed one is reported and the exit status is
//! nonzero, the other plots are still drawn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
enum PlotError {
    /// The input directory or a file in it could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A result file is not JSON.
    #[error("parsing {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A result file is JSON but lacks what the plot needs.
    #[error("{path}: {msg}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        msg: String,
    },
    /// plotters failed to draw or write the SVG.
    #[error("drawing {path}: {msg}")]
    Draw {
        /// The SVG being written.
        path: PathBuf,
        /// plotters' error.
        msg: String,
    },
}

/// A plot's outcome when it did not fail.
enum Outcome {
    /// The SVG was written.
    Wrote(PathBuf),
    /// The input is absent (the message says which).
    Skipped(String),
}

/// Adapts a plotters error to [`PlotError::Draw`] for the SVG at `path`.
fn draw_err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> PlotError + '_ {
    move |e| PlotError::Draw {
        path: path.to_owned(),
        msg: e.to_string(),
    }
}

fn shape(path: &Path, msg: impl Into<String>) -> PlotError {
    PlotError::Shape {
        path: path.to_owned(),
        msg: msg.into(),
    }
}

fn read_json(path: &Path) -> Result<Value, PlotError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlotError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| PlotError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// `v[key]` as an object, or a shape error naming `what`.
fn object<'a>(
    v: &'a Value,
    key: &str,
    path: &Path,
    what: &str,
) -> Result<&'a serde_json::Map<String, Value>, PlotError> {
    v.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| shape(path, format!("{what}: no object `{key}`")))
}

/// The median of contender `name` in a bench.py group's `contenders` map, if present.
fn median(contenders: &serde_json::Map<String, Value>, name: &str) -> Option<f64> {
    contenders.get(name)?.get("median_ns")?.as_f64()
}

/// A series color.
fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// (min, max) of `xs`, or `None` when empty.
fn bounds(xs: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    xs.into_iter()
        .filter(|x| x.is_finite())
        .fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
        })
}

/// One line of the thread-scaling plot: its label and `(threads, ludus ÷ raw)` points.
type Line = (String, Vec<(f64, f64)>);

/// The scaling lines of one bench.py result of `memory_threads`.
fn scaling_lines(path: &Path, tag: Option<&str>) -> Result<Vec<Line>, PlotError> {
    let doc = read_json(path)?;
    let groups = object(&doc, "groups", path, "a bench.py result")?;
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (group, data) in groups {
        // scale_{same|spread}_{warm|new}_t{N}
        let Some(rest) = group.strip_prefix("scale_") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('_').collect();
        let [mode, kind, t] = parts.as_slice() else {
            continue;
        };
        let Some(threads) = t.strip_prefix('t').and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        let contenders = object(data, "contenders", path, group)?;
        for name in contenders.keys() {
            let Some(rest) = name.strip_prefix("ludus_") else {
                continue;
            };
            // `ludus_exact_X`: the same backend with exact (shared-atomic) counters.
            let (backend, counters) = match rest.strip_prefix("exact_") {
                Some(b) => (b, " exact"),
                None => (rest, ""),
            };
            let (Some(ours), Some(raw)) = (
                median(contenders, name),
                median(contenders, &format!("raw_{backend}")),
            ) else {
                continue;
            };
            if raw > 0.0 {
                let label = match tag {
                    Some(tag) => format!("{backend}{counters} {mode} {kind} [{tag}]"),
                    None => format!("{backend}{counters} {mode} {kind}"),
                };
                lines.entry(label).or_default().push((threads, ours / raw));
            }
        }
    }
    Ok(lines
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, v)
        })
        .collect())
}

/// Plot (a): ludus ÷ raw against the thread count.
fn plot_scaling(dir: &Path) -> Result<Outcome, PlotError> {
    let entries = std::fs::read_dir(dir).map_err(|source| PlotError::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("memory-threads") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Ok(Outcome::Skipped(format!(
            "no {}/memory-threads*.json (python3 scripts/bench.py memory_threads --name memory-threads)",
            dir.display()
        )));
    }
    let mut lines = Vec::new();
    for f in &files {
        let tag = (files.len() > 1).then(|| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        lines.extend(scaling_lines(f, tag.as_deref())?);
    }
    let Some((x_lo, x_hi)) = bounds(lines.iter().flat_map(|l| l.1.iter().map(|p| p.0))) else {
        return Err(shape(
            &files[0],
            "no scale_* group with a ludus_X and raw_X pair",
        ));
    };
    let (y_lo, y_hi) = bounds(lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)))
        .map_or((0.0, 2.0), |(lo, hi)| (lo.min(1.0), hi.max(1.0)));
    let out = dir.join("memory-threads-scaling.svg");
    let err = draw_err(&out);
    let root = SVGBackend::new(&out, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let pad = (y_hi - y_lo).max(0.1) * 0.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "memory_threads: ludus median ÷ raw median (same backend)",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (x_lo - 0.5)..(x_hi + 0.5),
            (y_lo - pad).max(0.0)..(y_hi + pad),
        )
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc("ludus ÷ raw (< 1: ludus faster)")
        .x_labels((x_hi - x_lo) as usize + 2)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(&err)?;
    chart
        .draw_series(LineSeries::new(
            [(x_lo - 0.5, 1.0), (x_hi + 0.5, 1.0)],
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(&err)?
        .label("1.0: no accounting cost")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.5)));
    for (i, (label, points)) in lines.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(&err)?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(&err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(Outcome::Wrote(out.clone()))
}

/// The `[quantile, ns]` CDF of `run[key]`.
fn cdf(run: &Value, key: &str, path: &Path) -> Result<Vec<(f64, f64)>, PlotError> {
    let points = run
        .get(key)
        .and_then(|d| d.get("cdf"))
        .and_then(Value::as_array)
        .ok_or_else(|| shape(path, format!("a run has no `{key}.cdf` array")))?;
    points
        .iter()
        .map(|p| {
            match (
                p.get(0).and_then(Value::as_f64),
                p.get(1).and_then(Value::as_f64),
            ) {
                // A log axis cannot show 0 ns; the timer's resolution floor is ≥ 1 ns anyway.
                (Some(q), Some(ns)) => Ok((ns.max(1.0), q)),
                _ => Err(shape(
                    path,
                    format!("`{key}.cdf` holds a non-[q, ns] point"),
                )),
            }
        })
        .collect()
}

/// One latency panel: every contender's CDF of `key` and the first run's timer overhead.
fn latency_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
    (x_lo, x_hi): (f64, f64),
    out: &Path,
) -> Result<(), PlotError> {
    let err = draw_err(out);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0.0..1.0)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("ns (log)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("fraction of operations ≤ x")
        .draw()
        .map_err(&err)?;
    for (i, (label, points)) in series.iter().enumerate() {
        let c = if label.starts_with("timer") {
            RGBColor(128, 128, 128)
        } else {
            color(i)
        };
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(&err)?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&err)?;
    Ok(())
}

/// Plot (b): allocate and free latency CDFs.
fn plot_latency(dir: &Path) -> Result<Outcome, PlotError> {
    let path = dir.join("memory-latency.json");
    if !path.exists() {
        return Ok(Outcome::Skipped(format!(
            "no {} (python3 scripts/memory_workloads.py latency)",
            path.display()
        )));
    }
    let doc = read_json(&path)?;
    let runs = doc
        .get("runs")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| shape(&path, "no nonempty `runs` array"))?;
    let mut panels = Vec::new();
    for key in ["allocate", "free"] {
        let mut series = Vec::new();
        for run in runs {
            let name = run
                .get("contender")
                .and_then(Value::as_str)
                .ok_or_else(|| shape(&path, "a run has no `contender`"))?;
            series.push((name.to_owned(), cdf(run, key, &path)?));
        }
        series.push((
            "timer overhead (Instant pair, not subtracted)".to_owned(),
            cdf(&runs[0], "timer_overhead", &path)?,
        ));
        panels.push((key, series));
    }
    let (x_lo, x_hi) = bounds(
        panels
            .iter()
            .flat_map(|(_, s)| s.iter().flat_map(|l| l.1.iter().map(|p| p.0))),
    )
    .ok_or_else(|| shape(&path, "every CDF is empty"))?;
    let x_hi = x_hi.max(x_lo * 10.0);
    let smoke = doc.get("smoke").and_then(Value::as_bool).unwrap_or(false);
    let out = dir.join("memory-latency-cdf.svg");
    let err = draw_err(&out);
    let root = SVGBackend::new(&out, (1200, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let areas = root.split_evenly((1, 2));
    for ((key, series), area) in panels.iter().zip(&areas) {
        let title = format!(
            "{key} latency CDF{}",
            if smoke { " (SMOKE RUN)" } else { "" }
        );
        latency_panel(area, &title, series, (x_lo * 0.9, x_hi * 1.1), &out)?;
    }
    root.present().map_err(&err)?;
    Ok(Outcome::Wrote(out.clone()))
}

/// Plot (c): per workload, the ludus contender's median ÷ every other contender's median.
fn plot_peers(dir: &Path) -> Result<Outcome, PlotError> {
    let path = dir.join("peers.json");
    if !path.exists() {
        return Ok(Outcome::Skipped(format!(
            "no {} (python3 scripts/bench.py peers)",
            path.display()
        )));
    }
    let doc = read_json(&path)?;
    let groups = object(&doc, "groups", &path, "a bench.py result")?;
    // (workload, [(other, ratio)])
    let mut bars: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for (group, data) in groups {
        let contenders = object(data, "contenders", &path, group)?;
        let Some(ours) = contenders
            .keys()
            .find(|k| *k == "ludus" || k.starts_with("ludus"))
        else {
            continue;
        };
        let Some(m) = median(contenders, ours) else {
            continue;
        };
        let mut row = Vec::new();
        for other in contenders.keys().filter(|k| !k.starts_with("ludus")) {
            if let Some(o) = median(contenders, other).filter(|o| *o > 0.0) {
                if !others.contains(other) {
                    others.push(other.clone());
                }
                row.push((other.clone(), m / o));
            }
        }
        bars.push((group.clone(), row));
    }
    others.sort();
    let (lo, hi) = bounds(bars.iter().flat_map(|b| b.1.iter().map(|r| r.1)))
        .ok_or_else(|| shape(&path, "no group with a ludus contender and another one"))?;
    let (y_lo, y_hi) = (lo.min(1.0) / 1.5, hi.max(1.0) * 1.5);
    let out = dir.join("peers-ratios.svg");
    let err = draw_err(&out);
    let width = (160 + bars.len() * 30 * (others.len() + 1)).max(800) as u32;
    let root = SVGBackend::new(&out, (width, 680)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "peers: ludus median ÷ other median per workload (< 1: ludus faster)",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(180)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..bars.len() as f64, (y_lo..y_hi).log_scale())
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(12)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .y_desc("ratio (log)")
        .draw()
        .map_err(&err)?;
    let w = 0.8 / others.len().max(1) as f64;
    for (j, other) in others.iter().enumerate() {
        let c = color(j);
        let rects: Vec<Rectangle<(f64, f64)>> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, (_, row))| {
                let r = row.iter().find(|(o, _)| o == other)?.1;
                let x0 = i as f64 + 0.1 + j as f64 * w;
                Some(Rectangle::new([(x0, y_lo), (x0 + w * 0.9, r)], c.filled()))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(&err)?
            .label(other.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            [(0.0, 1.0), (bars.len() as f64, 1.0)],
            BLACK.stroke_width(2),
        ))
        .map_err(&err)?
        .label("1.0")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&err)?;
    let font = TextStyle::from(("sans-serif", 14).into_font())
        .transform(FontTransform::Rotate90)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, _)) in bars.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
        root.draw(&Text::new(name.as_str(), (px, py + 8), font.clone()))
            .map_err(&err)?;
    }
    root.present().map_err(&err)?;
    Ok(Outcome::Wrote(out.clone()))
}

/// One plot: reads its inputs from the directory, writes its SVG there.
type Plot = fn(&Path) -> Result<Outcome, PlotError>;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let dir = args
        .next()
        .map_or_else(|| PathBuf::from("perf-results"), PathBuf::from);
    if args.next().is_some() {
        eprintln!("usage: ludus-plot [DIR]   (DIR defaults to perf-results)");
        return ExitCode::FAILURE;
    }
    if !dir.is_dir() {
        eprintln!("ludus-plot: {} is not a directory", dir.display());
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    let plots: [(&str, Plot); 3] = [
        ("thread scaling", plot_scaling),
        ("latency CDFs", plot_latency),
        ("peer ratios", plot_peers),
    ];
    for (what, plot) in plots {
        match plot(&dir) {
            Ok(Outcome::Wrote(p)) => println!("{what}: wrote {}", p.display()),
            Ok(Outcome::Skipped(why)) => println!("{what}: skipped: {why}"),
            Err(e) => {
                eprintln!("{what}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
