//! The Prometheus text exposition format 0.0.4 of a [`Snapshot`].

use std::fmt::Write as _;

use super::{SeriesValue, Snapshot};

impl Snapshot {
    /// The snapshot in the Prometheus text exposition format 0.0.4:
    /// `# HELP` and `# TYPE` lines for every metric, then its samples
    /// (`_bucket{le=…}`, `_sum`, `_count` for a histogram).
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        for m in &self.metrics {
            let _ = writeln!(out, "# HELP {} {}", m.name, escape_help(m.help));
            let _ = writeln!(out, "# TYPE {} {}", m.name, m.kind.as_str());
            for s in &m.series {
                match &s.value {
                    SeriesValue::Number(n) => {
                        let _ = writeln!(out, "{}{} {}", m.name, labels(&s.labels, None), num(*n));
                    }
                    SeriesValue::Histogram(h) => {
                        for (le, c) in &h.buckets {
                            let _ = writeln!(
                                out,
                                "{}_bucket{} {c}",
                                m.name,
                                labels(&s.labels, Some(&num(*le)))
                            );
                        }
                        let _ = writeln!(
                            out,
                            "{}_bucket{} {}",
                            m.name,
                            labels(&s.labels, Some("+Inf")),
                            h.count
                        );
                        let l = labels(&s.labels, None);
                        let _ = writeln!(out, "{}_sum{l} {}", m.name, num(h.sum));
                        let _ = writeln!(out, "{}_count{l} {}", m.name, h.count);
                    }
                }
            }
        }
        out
    }
}

fn num(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{n}")
    }
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(pairs: &[(&'static str, String)], le: Option<&str>) -> String {
    if pairs.is_empty() && le.is_none() {
        return String::new();
    }
    let mut parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    format!("{{{}}}", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::super::{Metric, MetricKind, Series};
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let s = Snapshot {
            metrics: vec![Metric {
                name: "payidem_x",
                help: "a\nb",
                kind: MetricKind::Gauge,
                series: vec![Series {
                    labels: vec![("l", "a\"b\\c\n".into())],
                    value: SeriesValue::Number(1.5),
                }],
            }],
        };
        assert_eq!(
            s.to_prometheus(),
            "# HELP payidem_x a\\nb\n# TYPE payidem_x gauge\npayidem_x{l=\"a\\\"b\\\\c\\n\"} 1.5\n"
        );
    }
}
