//! `hetsched policies`: the registry as a user reads it — each policy, what it models and
//! does, and its parameters with defaults and accepted ranges (as the policy's builder
//! reads them).

use clap::Args;
use hetsched_core::{Error, Result};
use hetsched_policies::REGISTRY;

#[derive(Args)]
pub struct PoliciesArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn policies(args: PoliciesArgs) -> Result<()> {
    if args.json {
        let list: Vec<serde_json::Value> = REGISTRY
            .iter()
            .map(|r| {
                let params: Vec<serde_json::Value> = r
                    .params()
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "key": p.key, "about": p.about,
                            "default": p.default, "accepts": p.accepts,
                        })
                    })
                    .collect();
                serde_json::json!({ "name": r.name, "about": r.about, "params": params })
            })
            .collect();
        let text = serde_json::to_string_pretty(&list).map_err(Error::runtime)?;
        println!("{text}");
        return Ok(());
    }
    for r in REGISTRY {
        println!("{:<9} {}", r.name, r.about);
        for p in r.params() {
            println!(
                "  {:<19} {} (default {}; accepts {})",
                p.key, p.about, p.default, p.accepts
            );
        }
    }
    println!("\nUse: --policy NAME or --policy NAME:key=value,key=value");
    Ok(())
}
