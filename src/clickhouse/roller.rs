//! `serve --scans-from`'s timer (issue 38): each round rolls up every
//! domain's closed days (`rollup`), then sums its periods' windows
//! (`windows`), which read the days rolled.

use chrono::Utc;

use super::client::Client;
use super::rollup::{self, EVERY, ROLL_TIMEOUT};
use super::windows;

/// `serve --scans-from`'s roller: every [`EVERY`], each domain's days
/// due, then its windows (`super::windows`).
pub struct Roller {
    client: Client,
    domains: Vec<String>,
}

impl Roller {
    /// Rolls the days of `domains` in the database `url` names.
    pub fn new(url: super::ClickHouseUrl, domains: Vec<String>) -> Roller {
        Roller {
            client: Client::new(url, ROLL_TIMEOUT),
            domains,
        }
    }

    /// Runs until dropped: a round at once, then every [`EVERY`]. A round
    /// that fails is logged and tried again at the next: reads are right
    /// without it, only slower.
    pub async fn run(self) {
        loop {
            for domain in &self.domains {
                match rollup::roll_due(&self.client, domain, Utc::now()).await {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!(domain = %domain, days = n, "ClickHouse: closed days rolled up")
                    }
                    Err(e) => {
                        tracing::warn!(domain = %domain, error = %e, "ClickHouse: rolling up closed days failed; reads take the states meanwhile");
                        continue;
                    }
                }
                // Only once every closed day is rolled: a window sums them.
                match windows::build_due(&self.client, domain, Utc::now()).await {
                    Ok(b) if b.total() == 0 => {}
                    Ok(b) => {
                        tracing::info!(domain = %domain, whole = b.whole, from_the_day_before = b.next, "ClickHouse: periods' busiest links summed")
                    }
                    Err(e) => {
                        tracing::warn!(domain = %domain, error = %e, "ClickHouse: summing the periods' links failed; the dashboard ranks from the days meanwhile")
                    }
                }
            }
            tokio::time::sleep(EVERY).await;
        }
    }
}
