//! `tandem clock-sim`: plays a recorded game's clock timeline to a broker as a clock bridge
//! would (one QoS 1 press per move, with both remaining times and a per-board `seq`), for tests
//! and the demo.

use std::time::Duration;

use rumqttc::{AsyncClient, Event, Incoming, MqttOptions, QoS};
use serde_json::json;

use crate::engine::{BoardId, Color};
use crate::publish::TableId;

use super::DaemonError;
use super::source::ClockPressAt;

/// Where and how fast to play.
#[derive(Debug, Clone)]
pub struct ClockSimOptions {
    pub host: String,
    pub port: u16,
    pub table: TableId,
    /// 1 = real time, 0 = as fast as possible.
    pub speed: f64,
    pub client_id: String,
    /// How long to wait for the last acknowledgements after the last press.
    pub drain_timeout: Duration,
}

/// What was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSimSummary {
    pub presses: usize,
    /// Presses the broker acknowledged (PUBACK).
    pub acked: usize,
}

/// The press topic and payload of one press; `seq` counts presses per board from 1.
pub fn press_message(table: &TableId, press: &ClockPressAt, seq: u64) -> (String, String) {
    let board = match press.board {
        BoardId::A => "A",
        BoardId::B => "B",
    };
    let side = match press.side {
        Color::White => "white",
        Color::Black => "black",
    };
    (
        format!("tandem/v1/{table}/clock/{board}/press"),
        json!({
            "side": side,
            "ts": press.ts,
            "white_ms": press.white_ms,
            "black_ms": press.black_ms,
            "seq": seq,
        })
        .to_string(),
    )
}

/// Publishes `presses` at their timeline times (scaled by `speed`); keeps going through broker
/// restarts (rumqttc resends unacknowledged presses after reconnecting).
pub async fn run_clock_sim(
    presses: &[ClockPressAt],
    options: &ClockSimOptions,
) -> Result<ClockSimSummary, DaemonError> {
    let mut mqtt = MqttOptions::new(
        options.client_id.clone(),
        options.host.clone(),
        options.port,
    );
    mqtt.set_keep_alive(Duration::from_secs(5))
        .set_clean_session(false);
    let (client, mut eventloop) = AsyncClient::new(mqtt, presses.len().max(1) + 8);
    let (acked_tx, mut acked_rx) = tokio::sync::watch::channel(0usize);
    let poller = tokio::spawn(async move {
        let mut acked = 0usize;
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Incoming::PubAck(_))) => {
                    acked += 1;
                    let _ = acked_tx.send(acked);
                }
                Ok(_) => {}
                Err(e) => {
                    log::info!("clock-sim: {e}; reconnecting");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    let start = tokio::time::Instant::now();
    let mut seq = [0u64; 2];
    for press in presses {
        if options.speed > 0.0 {
            let due = Duration::from_secs_f64(press.ts as f64 / 1000.0 / options.speed);
            tokio::time::sleep_until(start + due).await;
        }
        let s = &mut seq[press.board.index()];
        *s += 1;
        let (topic, payload) = press_message(&options.table, press, *s);
        client
            .publish(topic, QoS::AtLeastOnce, false, payload)
            .await
            .map_err(|e| DaemonError::Mqtt(e.to_string()))?;
    }
    let deadline = tokio::time::Instant::now() + options.drain_timeout;
    while *acked_rx.borrow() < presses.len() {
        if tokio::time::timeout_at(deadline, acked_rx.changed())
            .await
            .is_err()
        {
            break;
        }
    }
    let acked = *acked_rx.borrow();
    let _ = client.disconnect().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    poller.abort();
    Ok(ClockSimSummary {
        presses: presses.len(),
        acked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn press_messages_parse_as_clock_presses() {
        let table = TableId::new("t1").unwrap();
        let press = ClockPressAt {
            board: BoardId::B,
            side: Color::Black,
            ts: 4200,
            white_ms: 170_000,
            black_ms: 171_500,
        };
        let (topic, payload) = press_message(&table, &press, 3);
        let parsed = crate::publish::parse_inbound(&topic, payload.as_bytes()).unwrap();
        match parsed {
            crate::publish::Inbound::Clock {
                board,
                input: crate::publish::ClockInput::Press(p),
                ..
            } => {
                assert_eq!(board, crate::publish::Board::B);
                assert_eq!(p.side, crate::publish::Side::Black);
                assert_eq!((p.ts, p.seq, p.black_ms), (4200, Some(3), Some(171_500)));
            }
            other => panic!("{other:?}"),
        }
    }
}
