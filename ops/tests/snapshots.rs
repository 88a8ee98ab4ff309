//! Snapshots of the printed IR of every workload × schedule at the seed size: the
//! scheduled Func (with the trace that made it) and the lowered kernels.

use weft_ops::{OPS, Workload};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

#[test]
fn ir_before_and_after_lowering() {
    for op in OPS {
        let w = Workload::default_for(op.name).unwrap();
        for schedule in op.schedules {
            let sch = w.schedule(Some(schedule)).unwrap();
            let trace: String = sch
                .trace()
                .to_string()
                .lines()
                .map(|l| format!("# {l}\n"))
                .collect();
            let ir = format!(
                "# {} `{}` at {}\n{}{}",
                op.name,
                schedule,
                w.shape,
                trace,
                sch.func()
            );
            let lowered = w.lower(schedule).unwrap().to_string();
            settings().bind(|| {
                insta::assert_snapshot!(format!("{}__{}__ir", op.name, schedule), ir);
                insta::assert_snapshot!(format!("{}__{}__lowered", op.name, schedule), lowered);
            });
        }
    }
}

#[test]
fn traces_replay_to_the_same_func() {
    for op in OPS {
        let w = Workload::default_for(op.name).unwrap();
        for schedule in op.schedules {
            // A template is written directly: it has no trace to replay.
            if w.template(schedule).is_some() {
                continue;
            }
            let sch = w.schedule(Some(schedule)).unwrap();
            let replayed = sch.trace().replay(w.func.clone()).unwrap();
            assert_eq!(
                sch.func().to_string(),
                replayed.func().to_string(),
                "{} {schedule}",
                op.name
            );
            assert_eq!(sch.trace().to_string(), replayed.trace().to_string());
        }
    }
}
