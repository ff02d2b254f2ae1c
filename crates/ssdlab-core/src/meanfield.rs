//! Write amplification of uniform random single-unit overwrites by the analytic and mean-field
//! models (FIFO, greedy with finite blocks, d-choices): pure formulas, no drive. The theory
//! group (`crate::theory`) checks the simulated FTL against them; the nominal GC pace
//! (`crate::ftl::nominal_pace`) sizes a firmware's copying by the greedy one.

/// FIFO (and, for large b, any order-preserving collector): A = alpha / (alpha + W0(-alpha e^-alpha)).
pub fn fifo_waf(alpha: f64) -> f64 {
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// The principal branch of Lambert's W for x in [-1/e, 0], by Halley's iteration.
pub fn lambert_w0(x: f64) -> f64 {
    assert!(
        (-1.0 / std::f64::consts::E - 1e-12..=0.0).contains(&x),
        "W0({x}) out of range"
    );
    // Start from the series about the branch point, good near -1/e, or from x itself.
    let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
    let mut w = if x < -0.25 { -1.0 + p - p * p / 3.0 } else { x };
    for _ in 0..100 {
        let e = w.exp();
        let f = w * e - x;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() < 1e-15 * w.abs().max(1e-300) {
            break;
        }
    }
    w
}

/// Greedy, mean-field, finite b: solve alpha (b - x)/b = H_b - H_k + (k - x)/k for x in
/// [k-1, k] (H_n harmonic numbers, k = ceil(x)); A = b / (b - x).
pub fn greedy_waf(alpha: f64, b: u32) -> f64 {
    // H_n summed from 1 up, as a sum of each would be (bit for bit), once for all n.
    let mut h = Vec::with_capacity(b as usize + 1);
    h.push(0.0f64);
    for i in 1..=b {
        h.push(h[i as usize - 1] + 1.0 / i as f64);
    }
    let bf = b as f64;
    for k in 1..=b {
        let kf = k as f64;
        let x = (h[b as usize] - h[k as usize] + 1.0 - alpha) / (1.0 / kf - alpha / bf);
        if x >= kf - 1.0 - 1e-12 && x <= kf + 1e-12 {
            return bf / (bf - x);
        }
    }
    panic!("greedy mean field: no solution for alpha {alpha}, b {b}");
}

/// d-choices (the victim is the block with the fewest valid pages among d drawn at random, with
/// replacement): the fixed point of the mean-field model (Van Houdt, SIGMETRICS 2013).
///
/// With x_j the fraction of blocks holding j valid pages, T_j = sum_{i>=j} x_i, and g victims
/// per host write, the flow of blocks across the boundary between j and j-1 balances:
/// (alpha / b) j x_j = g (1 - T_j^d) for j >= 1 (new blocks enter full, victims leave, pages
/// die at rate j per L writes). The victim's mean valid count is m = sum_{j>=1} T_j^d, and
/// g = 1 / (b - m). With c = b g / alpha, x_j = (c / j)(1 - T_j^d) is solved from j = b down;
/// c is found by bisection so that c = b / (alpha (b - m(c))). Then A = b / (b - m).
/// d = 1 gives alpha / (alpha - 1) exactly.
pub fn d_choices_waf(alpha: f64, b: u32, d: u32) -> f64 {
    let m_of = |c: f64| -> Option<f64> {
        let mut tail = 0.0; // T_{j+1}
        let mut m = 0.0;
        for j in (1..=b).rev() {
            // x solves x = (c/j)(1 - (tail + x)^d), monotone in x on [0, 1 - tail].
            let (mut lo, mut hi) = (0.0f64, 1.0 - tail);
            for _ in 0..100 {
                let x = 0.5 * (lo + hi);
                if x - (c / j as f64) * (1.0 - (tail + x).powi(d as i32)) > 0.0 {
                    hi = x;
                } else {
                    lo = x;
                }
            }
            tail += 0.5 * (lo + hi);
            m += tail.powi(d as i32);
        }
        (tail <= 1.0 + 1e-12).then_some(m)
    };
    // f(c) = c alpha (b - m(c)) - b: negative for small c, positive for large.
    let (mut lo, mut hi) = (0.0f64, b as f64 * 4.0);
    for _ in 0..200 {
        let c = 0.5 * (lo + hi);
        let m = m_of(c).unwrap_or(b as f64);
        if c * alpha * (b as f64 - m) - b as f64 > 0.0 {
            hi = c;
        } else {
            lo = c;
        }
    }
    let m = m_of(0.5 * (lo + hi)).expect("fixed point inside the simplex");
    b as f64 / (b as f64 - m)
}
