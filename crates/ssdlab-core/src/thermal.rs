//! Heat: a lumped thermal model of the drive and the firmware's thermal throttling.
//!
//! The drive is one thermal mass `C` (J/°C) joined to the air around it by a thermal
//! resistance `R` (°C/W): C dT/dt = P - (T - T_ambient) / R. Between two updates the power is
//! taken as the average of the energy the drive spent (`crate::power`), and the equation is
//! solved exactly for it: T = T_amb + P R + (T_0 - T_amb - P R) e^(-dt / RC). Moving air
//! lowers R: forced convection's heat transfer grows with the square root of the air speed
//! (laminar flow over a plate, Nu ~ Re^(1/2)), so R = R_still / sqrt(1 + v / 1 m/s).
//!
//! Throttling as the M500's firmware does it (drives.toml: "thermal throttling above 70 C
//! controller temperature"; cdrinfo's M500 review: the firmware "will instruct the drive to
//! reduce performance until it returns to normal operating temperature"): above `throttle_c`
//! the scheduler lets only `throttle_active_dies_pct` of the dies run array operations at
//! once, until the drive has cooled to `throttle_release_c`.

use crate::time::{SimDuration, SimTime};
use serde::{Deserialize, Serialize};

/// A drive's thermal figures and its surroundings (`[thermal]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThermalConfig {
    /// The air around the drive.
    pub ambient_c: f64,
    pub airflow_m_per_s: f64,
    /// Controller to ambient in still air, °C per watt.
    pub resistance_still_air_c_per_w: f64,
    /// The drive's heat capacity, joules per °C.
    pub capacitance_j_per_c: f64,
    /// Throttling starts above this temperature and ends at or below `throttle_release_c`;
    /// no throttling when `throttle_c` is 0.
    pub throttle_c: f64,
    pub throttle_release_c: f64,
    /// While throttled, the share of dies that may run array operations at once, percent.
    pub throttle_active_dies_pct: f64,
}

impl ThermalConfig {
    pub fn check(&self) -> Result<(), (String, String)> {
        let positive = [
            (
                "resistance_still_air_c_per_w",
                self.resistance_still_air_c_per_w,
            ),
            ("capacitance_j_per_c", self.capacitance_j_per_c),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err((format!("thermal.{name}"), format!("{v}: accepted: > 0")));
            }
        }
        if !(self.ambient_c.is_finite() && (-40.0..=100.0).contains(&self.ambient_c)) {
            return Err((
                "thermal.ambient_c".into(),
                format!("{}: accepted: -40 to 100", self.ambient_c),
            ));
        }
        if !(self.airflow_m_per_s.is_finite() && self.airflow_m_per_s >= 0.0) {
            return Err((
                "thermal.airflow_m_per_s".into(),
                format!("{}: accepted: 0 or more", self.airflow_m_per_s),
            ));
        }
        if self.throttle_c != 0.0
            && !(self.throttle_release_c.is_finite()
                && self.throttle_c.is_finite()
                && self.throttle_release_c < self.throttle_c)
        {
            return Err((
                "thermal.throttle_release_c".into(),
                format!(
                    "{} with throttle_c {}: accepted: below throttle_c",
                    self.throttle_release_c, self.throttle_c
                ),
            ));
        }
        if !(self.throttle_active_dies_pct > 0.0 && self.throttle_active_dies_pct <= 100.0) {
            return Err((
                "thermal.throttle_active_dies_pct".into(),
                format!(
                    "{}: accepted: above 0, up to 100",
                    self.throttle_active_dies_pct
                ),
            ));
        }
        Ok(())
    }

    /// Controller to ambient at the configured air speed, °C per watt.
    pub fn resistance_c_per_w(&self) -> f64 {
        self.resistance_still_air_c_per_w / (1.0 + self.airflow_m_per_s).sqrt()
    }
}

/// How often the temperature is brought up to date: far below the drive's time constant
/// (RC: minutes), so the step does not show.
pub const UPDATE_EVERY: SimDuration = SimDuration(100_000_000);

/// The drive's temperature and whether it is throttling.
#[derive(Clone, Debug)]
pub struct Thermal {
    cfg: ThermalConfig,
    resistance: f64,
    temperature_c: f64,
    updated_at: SimTime,
    /// Energy (joules since power-on) at `updated_at`.
    energy_j: f64,
    pub throttled: bool,
    /// Times throttling started.
    pub throttle_events: u64,
    /// Time spent throttled, ns.
    pub throttled_ns: u64,
}

impl Thermal {
    /// A drive at ambient temperature at `now`, having spent `energy_j`.
    pub fn new(cfg: &ThermalConfig, now: SimTime, energy_j: f64) -> Thermal {
        Thermal {
            resistance: cfg.resistance_c_per_w(),
            temperature_c: cfg.ambient_c,
            cfg: cfg.clone(),
            updated_at: now,
            energy_j,
            throttled: false,
            throttle_events: 0,
            throttled_ns: 0,
        }
    }

    pub fn temperature_c(&self) -> f64 {
        self.temperature_c
    }

    /// When the next update is due.
    pub fn next_update(&self) -> SimTime {
        self.updated_at + UPDATE_EVERY
    }

    /// Bring the temperature to `now`, the drive having spent `energy_j` since power-on.
    /// Returns true when throttling started or ended.
    pub fn update(&mut self, now: SimTime, energy_j: f64) -> bool {
        let dt = now.saturating_since(self.updated_at).secs_f64();
        if dt <= 0.0 {
            return false;
        }
        let watts = (energy_j - self.energy_j) / dt;
        let settled = self.cfg.ambient_c + watts * self.resistance;
        let tau = self.resistance * self.cfg.capacitance_j_per_c;
        self.temperature_c = settled + (self.temperature_c - settled) * (-dt / tau).exp();
        if self.throttled {
            self.throttled_ns += (now - self.updated_at).0;
        }
        self.updated_at = now;
        self.energy_j = energy_j;
        let was = self.throttled;
        if self.cfg.throttle_c != 0.0 {
            if !self.throttled && self.temperature_c > self.cfg.throttle_c {
                self.throttled = true;
                self.throttle_events += 1;
            } else if self.throttled && self.temperature_c <= self.cfg.throttle_release_c {
                self.throttled = false;
            }
        }
        was != self.throttled
    }

    /// Dies that may run array operations at once while throttled, of `dies`.
    pub fn throttled_dies(&self, dies: u32) -> u32 {
        ((dies as f64 * self.cfg.throttle_active_dies_pct / 100.0).floor() as u32).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ThermalConfig {
        ThermalConfig {
            ambient_c: 25.0,
            airflow_m_per_s: 0.0,
            resistance_still_air_c_per_w: 10.0,
            capacitance_j_per_c: 10.0,
            throttle_c: 70.0,
            throttle_release_c: 65.0,
            throttle_active_dies_pct: 50.0,
        }
    }

    fn at(s: f64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs_f64(s)
    }

    #[test]
    fn constant_power_settles_at_ambient_plus_power_times_resistance() {
        let mut t = Thermal::new(&cfg(), SimTime::ZERO, 0.0);
        // 3 W for 1000 s (ten time constants of 100 s), in steps.
        for k in 1..=1000 {
            t.update(at(k as f64), 3.0 * k as f64);
        }
        assert!(
            (t.temperature_c() - 55.0).abs() < 0.01,
            "{}",
            t.temperature_c()
        );
        // One step or a thousand: the exact solution gives the same temperature.
        let mut one = Thermal::new(&cfg(), SimTime::ZERO, 0.0);
        one.update(at(1000.0), 3000.0);
        assert!((one.temperature_c() - t.temperature_c()).abs() < 1e-6);
    }

    #[test]
    fn moving_air_cools_the_drive() {
        let mut fan = cfg();
        fan.airflow_m_per_s = 3.0;
        assert!((fan.resistance_c_per_w() - 5.0).abs() < 1e-12);
        let (mut a, mut b) = (
            Thermal::new(&cfg(), SimTime::ZERO, 0.0),
            Thermal::new(&fan, SimTime::ZERO, 0.0),
        );
        a.update(at(600.0), 1800.0);
        b.update(at(600.0), 1800.0);
        assert!(b.temperature_c() < a.temperature_c());
    }

    #[test]
    fn throttling_engages_above_its_threshold_and_releases_once_cooled() {
        let mut t = Thermal::new(&cfg(), SimTime::ZERO, 0.0);
        // 5 W settles at 75 C: past 70 C throttling starts.
        let mut e = 0.0;
        let mut s = 0.0;
        while !t.throttled {
            s += 1.0;
            e += 5.0;
            t.update(at(s), e);
            assert!(s < 2000.0);
        }
        assert!(t.temperature_c() > 70.0 && t.throttle_events == 1);
        // Idle at 1 W (settles at 35 C): it stays throttled down to 65 C, then releases.
        while t.throttled {
            s += 1.0;
            e += 1.0;
            t.update(at(s), e);
            assert!(t.temperature_c() > 64.0 || !t.throttled);
        }
        assert!(t.temperature_c() <= 65.0 && t.throttled_ns > 0);
        assert_eq!(t.throttled_dies(8), 4);
    }
}
