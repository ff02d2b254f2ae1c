use super::*;

/// A power model for tests: 1 W of active idle, 0.5 W busy processor, 0.1005 W a die.
pub(crate) fn cfg() -> PowerConfig {
    PowerConfig {
        nand_vcc_v: 3.3,
        nand_icc_read_ma: 25.0,
        nand_icc_program_ma: 25.0,
        nand_icc_erase_ma: 25.0,
        nand_vccq_v: 1.8,
        nand_iccq_io_ma: 10.0,
        controller_busy_w: 0.5,
        dram_pj_per_byte: 0.0,
        idle_active_w: 1.0,
        idle_partial_w: 0.5,
        idle_slumber_w: 0.1,
        idle_devsleep_w: 0.01,
        partial_exit_us: 10.0,
        slumber_exit_us: 1000.0,
        devsleep_exit_us: 20000.0,
        dipm_partial_after_us: 100.0,
        dipm_slumber_after_us: 10000.0,
        power_limit_w: None,
        nand_standby_ma: 0.0,
        dram: None,
    }
}

#[test]
fn a_power_limit_admits_the_dies_that_fit_above_idle() {
    // One die: 3.3 V x 25 mA + 1.8 V x 10 mA = 0.1005 W; 10 W - 1 W idle - 0.5 W busy.
    let c = cfg();
    assert_eq!(c.dies_within(10.0, c.idle_active_w), 84);
    assert_eq!(c.dies_within(1.2, c.idle_active_w), 0);
    let mut bad = cfg();
    bad.power_limit_w = Some(1.2);
    assert_eq!(bad.check().unwrap_err().0, "power.power_limit_w");
}

fn t_ms(ms: u64) -> SimTime {
    SimTime::ZERO + SimDuration(ms * 1_000_000)
}

#[test]
fn without_link_power_management_the_link_idles_active_at_active_idle_power() {
    let l = Link::new(
        &cfg(),
        cfg().state_power_w(0, 0),
        LinkPolicy::None,
        SimTime::ZERO,
    );
    assert_eq!(l.state_at(t_ms(5000)), LinkState::Active);
    assert!((l.static_energy_j(t_ms(2000)) - 2.0).abs() < 1e-9);
}

#[test]
fn dipm_walks_down_to_partial_then_slumber_and_idle_power_falls_with_depth() {
    let mut l = Link::new(
        &cfg(),
        cfg().state_power_w(0, 0),
        LinkPolicy::Dipm,
        SimTime::ZERO,
    );
    assert_eq!(l.state_at(t_ms(0)), LinkState::Active);
    assert_eq!(
        l.state_at(SimTime::ZERO + SimDuration(200_000)),
        LinkState::Partial
    );
    assert_eq!(l.state_at(t_ms(11)), LinkState::Slumber);
    // 0.1 ms active, 9.9 ms partial, then slumber to 1 s.
    let e = l.static_energy_j(t_ms(1000));
    let want = 1.0 * 1e-4 + 0.5 * 9.9e-3 + 0.1 * 0.990;
    assert!((e - want).abs() < 1e-9, "{e} vs {want}");
    assert!(
        e < Link::new(
            &cfg(),
            cfg().state_power_w(0, 0),
            LinkPolicy::None,
            SimTime::ZERO
        )
        .static_energy_j(t_ms(1000))
    );
    // The first command after idle pays slumber's exit latency; the next does not.
    assert_eq!(l.wake(t_ms(1000)), SimDuration(1_000_000));
    assert_eq!(l.state_at(t_ms(1500)), LinkState::Active);
    assert_eq!(l.wake(t_ms(1500)), SimDuration(0));
}

#[test]
fn devsleep_is_reached_after_the_host_timer_and_costs_the_longest_wake() {
    let mut l = Link::new(
        &cfg(),
        cfg().state_power_w(0, 0),
        LinkPolicy::DevSleep,
        SimTime::ZERO,
    );
    assert_eq!(l.state_at(t_ms(999)), LinkState::Slumber);
    assert_eq!(l.state_at(t_ms(1000)), LinkState::DevSleep);
    assert_eq!(l.wake(t_ms(3000)), SimDuration(20_000_000));
}

#[test]
fn energy_accounting_is_continuous_across_busy_and_idle_stretches() {
    let mut l = Link::new(
        &cfg(),
        cfg().state_power_w(0, 0),
        LinkPolicy::Hipm,
        SimTime::ZERO,
    );
    // Idle 1 s (slumber after 0.1 ms active), busy 1 s (active), idle 1 s again.
    l.wake(t_ms(1000));
    l.idle(t_ms(2000));
    let e = l.static_energy_j(t_ms(3000));
    let idle = 1.0 * 1e-4 + 0.1 * (1.0 - 1e-4);
    assert!((e - (idle + 1.0 + idle)).abs() < 1e-9, "{e}");
}

#[test]
fn dynamic_energy_is_supply_voltage_times_current_times_time() {
    let a = Activity {
        program_array_ns: 1_000_000_000,
        ..Activity::default()
    };
    assert!((dynamic_energy_j(&cfg(), &a) - 3.3 * 0.025).abs() < 1e-12);
    let b = Activity {
        processor_ns: 2_000_000_000,
        ..a
    };
    assert!(dynamic_energy_j(&cfg(), &b) > dynamic_energy_j(&cfg(), &a));
    // DRAM: 1 GB through the buffer at 100 pJ per byte is 0.1 J.
    let dram = PowerConfig {
        dram_pj_per_byte: 100.0,
        ..cfg()
    };
    let c = Activity {
        dram_bytes: 1_000_000_000,
        ..Activity::default()
    };
    assert!((dynamic_energy_j(&dram, &c) - 0.1).abs() < 1e-12);
}

#[test]
fn a_bad_figure_is_named() {
    let mut c = cfg();
    c.idle_slumber_w = -1.0;
    assert_eq!(c.check().unwrap_err().0, "power.idle_slumber_w");
}

#[test]
fn dram_and_nand_standby_add_to_each_idle_state_by_size_but_not_to_devsleep() {
    let c = PowerConfig {
        nand_standby_ma: 0.01,
        dram: Some(DramPower {
            standby_w_per_gib: 0.28,
            power_down_w_per_gib: 0.10,
            self_refresh_w_per_gib: 0.072,
        }),
        ..cfg()
    };
    // Half a GiB of DRAM, 100 dies at 10 uA and 3.3 V: 3.3 mW of NAND standby.
    let w = c.state_power_w(1 << 29, 100);
    let nand = 100.0 * 0.01 * 3.3e-3;
    let want = [
        1.0 + 0.14 + nand,
        0.5 + 0.05 + nand,
        0.1 + 0.036 + nand,
        0.01,
    ];
    for (got, want) in w.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{w:?} against {want}");
    }
    // Twice the DRAM draws twice its part; without the table the figures are the drive's.
    let w2 = c.state_power_w(1 << 30, 100);
    assert!((w2[2] - w[2] - 0.036).abs() < 1e-12);
    assert_eq!(cfg().state_power_w(1 << 30, 100), [1.0, 0.5, 0.1, 0.01]);
    // Slumber's energy over a second follows the itemised figure.
    let l = Link::new(&c, w, LinkPolicy::Hipm, SimTime::ZERO);
    let e = l.static_energy_j(t_ms(1000));
    assert!(e > w[2] * 0.9 && e < w[0], "{e} J");
}

#[test]
fn a_bad_dram_figure_is_named() {
    let mut c = cfg();
    c.dram = Some(DramPower {
        standby_w_per_gib: 0.1,
        power_down_w_per_gib: f64::NAN,
        self_refresh_w_per_gib: 0.0,
    });
    assert_eq!(c.check().unwrap_err().0, "power.dram.power_down_w_per_gib");
}
