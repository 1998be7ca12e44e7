"""Every test file's kind, in one table (issue 34: tests grouped by kind without moving files).

tests/conftest.py's ``pytest_collection_modifyitems`` marks each collected test with its file's
kind, so ``pytest -m statistical`` (or ``cli``, ``report``, ``unit``) selects a kind and
``-m "statistical and not slow"`` its fast part.  The kinds (registered in pyproject.toml):

* ``statistical``: the assertion is a rate or a bound over seeded random draws, and the file
  states its confidence;
* ``cli``: drives the command line (``dpaudit.cli.main`` in process or a subprocess);
* ``report``: renders or reads the PDF or text reports;
* ``unit``: everything else.

One kind per file: a file that mixes kinds has its dominant one, and ``MIXED`` names it with
the other kinds it holds.  tests/test_test_kinds.py fails when a test file is missing here or a
name here is no test file."""

from typing import Final

KINDS: Final = ("unit", "statistical", "cli", "report")

KIND_OF_FILE: Final[dict[str, str]] = {
    "test_adapters.py": "unit",
    "test_alignment.py": "unit",
    "test_any_mechanism.py": "statistical",
    "test_api.py": "unit",
    "test_amortised.py": "unit",
    "test_api_reference.py": "unit",
    "test_architecture.py": "unit",
    "test_batched_scoring.py": "unit",
    "test_bench.py": "unit",
    "test_bench_costs.py": "unit",
    "test_betainv.py": "unit",
    "test_blame_wording.py": "unit",
    "test_check_mechanism.py": "unit",
    "test_citizen.py": "cli",
    "test_claim_registry.py": "unit",
    "test_cli.py": "cli",
    "test_cli_api_streams.py": "cli",
    "test_cli_explore.py": "cli",
    "test_cli_search.py": "cli",
    "test_cli_startup.py": "cli",
    "test_config.py": "unit",
    "test_config_plugins.py": "unit",
    "test_config_validators.py": "unit",
    "test_configs.py": "cli",
    "test_default_confidence.py": "unit",
    "test_detectable.py": "statistical",
    "test_doc_examples.py": "cli",
    "test_errata_witness.py": "statistical",
    "test_estimate.py": "statistical",
    "test_exact.py": "unit",
    "test_execution_startup.py": "unit",
    "test_exit_truth.py": "cli",
    "test_extreme_outputs.py": "unit",
    "test_float_leak_fix.py": "statistical",
    "test_float_search.py": "statistical",
    "test_floating.py": "statistical",
    "test_function_lengths.py": "unit",
    "test_fuzz_cli.py": "cli",
    "test_hostile.py": "cli",
    "test_interrupt.py": "cli",
    "test_interrupt_resume_helper.py": "cli",
    "test_joint_test.py": "statistical",
    "test_json_stdout.py": "cli",
    "test_kl_bandits.py": "unit",
    "test_kl_extensions.py": "unit",
    "test_kl_linear.py": "unit",
    "test_kl_rlhf.py": "statistical",
    "test_layout.py": "unit",
    "test_library_adapters.py": "unit",
    "test_libraries.py": "unit",
    "test_libraries_suite.py": "statistical",
    "test_list_hints.py": "cli",
    "test_list_plan_json.py": "cli",
    "test_listing_static.py": "cli",
    "test_memory_budgets.py": "unit",
    "test_messages.py": "cli",
    "test_named_values.py": "unit",
    "test_neighbors.py": "unit",
    "test_onerun_alignment.py": "statistical",
    "test_onerun_biased_secret.py": "statistical",
    "test_onerun_config_data.py": "unit",
    "test_onerun_covariance.py": "statistical",
    "test_onerun_default_rule.py": "statistical",
    "test_onerun_design_family.py": "unit",
    "test_onerun_detectable.py": "statistical",
    "test_onerun_dpsgd.py": "statistical",
    "test_onerun_exits.py": "cli",
    "test_onerun_formulas.py": "unit",
    "test_onerun_game.py": "unit",
    "test_onerun_isolated.py": "statistical",
    "test_onerun_isolated_dpsgd.py": "statistical",
    "test_onerun_opacus.py": "statistical",
    "test_onerun_speed_bench.py": "unit",
    "test_onerun_speed_fdp.py": "unit",
    "test_onerun_speed_plan.py": "unit",
    "test_pipeline_opacus_audit.py": "statistical",
    "test_pipeline_opacus_inputs.py": "unit",
    "test_pipeline_opacus_record.py": "report",
    "test_onerun_open_claims.py": "report",
    "test_onerun_plan.py": "statistical",
    "test_onerun_plots.py": "report",
    "test_onerun_policy.py": "statistical",
    "test_onerun_power.py": "statistical",
    "test_onerun_progress.py": "unit",
    "test_onerun_pytest.py": "statistical",
    "test_onerun_recheck.py": "unit",
    "test_onerun_premises.py": "statistical",
    "test_onerun_records.py": "cli",
    "test_onerun_rule_schema.py": "unit",
    "test_onerun_secret.py": "statistical",
    "test_onerun_sizes.py": "unit",
    "test_onerun_suite.py": "statistical",
    "test_fixed_costs.py": "cli",
    "test_onerun_table.py": "report",
    "test_onerun_tiebreak.py": "statistical",
    "test_onerun_user_inputs.py": "statistical",
    "test_onerun_validity.py": "statistical",
    "test_onerun_wiring.py": "cli",
    "test_packaging.py": "unit",
    "test_pair_search.py": "statistical",
    "test_parent_imports.py": "cli",
    "test_plan_inputs.py": "cli",
    "test_plan_progress.py": "cli",
    "test_plan_speed_exact.py": "unit",
    "test_plugin_family.py": "cli",
    "test_plugin_safety.py": "cli",
    "test_plumbing.py": "cli",
    "test_power.py": "statistical",
    "test_printable_names.py": "report",
    "test_private_imports.py": "unit",
    "test_private_po.py": "unit",
    "test_progress.py": "unit",
    "test_progress_reaches_pipes.py": "cli",
    "test_public_api.py": "unit",
    "test_pytest_plugin.py": "unit",
    "test_readable_results.py": "report",
    "test_renyi_claims.py": "unit",
    "test_report.py": "report",
    "test_report_blemishes.py": "report",
    "test_report_bounded.py": "report",
    "test_report_tradeoff_print.py": "report",
    "test_report_words.py": "report",
    "test_report_figures_print.py": "report",
    "test_report_layout.py": "report",
    "test_report_onerun.py": "report",
    "test_result_protocol.py": "unit",
    "test_result_sizes.py": "cli",
    "test_results_schema.py": "cli",
    "test_results_schema_rs.py": "unit",
    "test_results_room.py": "cli",
    "test_resume_calltime.py": "cli",
    "test_resume_importtime.py": "cli",
    "test_resume_plugins_datafiles.py": "cli",
    "test_resume_shell_variables.py": "unit",
    "test_runner.py": "unit",
    "test_samples_order.py": "statistical",
    "test_scale.py": "cli",
    "test_search.py": "statistical",
    "test_sel_selection_memo.py": "unit",
    "test_selection_memory.py": "unit",
    "test_self_contained.py": "unit",
    "test_sequential_and_curves.py": "statistical",
    "test_stattests.py": "unit",
    "test_streaming.py": "statistical",
    "test_supervise.py": "cli",
    "test_suite_confidence.py": "unit",
    "test_hostile_shells.py": "cli",
    "test_heartbeat.py": "unit",
    "test_svt_variants.py": "statistical",
    "test_sweep.py": "unit",
    "test_tail_thresholds.py": "statistical",
    "test_test_kinds.py": "unit",
    "test_testing_helper.py": "statistical",
    "test_tradeoff.py": "statistical",
    "test_typed_command.py": "cli",
    "test_user_exits.py": "cli",
    "test_user_frames.py": "cli",
    "test_user_keyboard_interrupt.py": "cli",
    "test_vector_mechanisms.py": "statistical",
    "test_verdicts.py": "cli",
    "test_voice.py": "cli",
    "test_zcdp_audit.py": "statistical",
}

# Files whose tests are of more than one kind: the other kinds they hold (their kind above is the
# dominant one, by count of tests).
MIXED: Final[dict[str, tuple[str, ...]]] = {
    "test_alignment.py": ("statistical",),  # exact curves and tables; a few seeded audits
    "test_api.py": ("statistical",),  # argument checks; expected verdicts of seeded audits
    "test_bench.py": ("cli",),  # the ceilings; `bench --json`
    "test_cli.py": ("report", "statistical"),  # the default run's summary, determinism, pinned verdicts
    "test_cli_search.py": ("statistical",),  # searched pairs caught or passed at 0.95, seed 0
    "test_detectable.py": ("cli", "report"),  # power 9 times in 10; `--json`'s key and the table
    "test_doc_examples.py": ("unit",),  # examples in a fresh interpreter; command lines parsed
    "test_extreme_outputs.py": ("cli",),  # outputs at the ends of their types; budgets refused by `run`
    "test_float_leak_fix.py": ("report",),  # refutation through the doubles; the report's note
    "test_hostile.py": ("unit", "report"),  # mostly `run`/`summary`/`report` exits; some API checks
    "test_interrupt.py": ("unit",),  # Ctrl-C through main() and a subprocess; engine phases
    "test_kl_rlhf.py": ("unit",),  # the MLE and exact numbers; printed theorems caught
    "test_layout.py": ("cli",),  # the package's folders; `python -m audit` in a subprocess
    "test_memory_budgets.py": ("cli",),  # chunk sizes and memory; `run` at 1e13 interrupted
    "test_messages.py": ("unit",),  # messages of the command line, and of close_names
    "test_onerun_config_data.py": ("cli",),  # the data files' checks; a config run as the API's example
    "test_onerun_exits.py": ("unit",),  # the command line's exit 2; the game and the API naming the function
    "test_onerun_game.py": ("statistical",),  # the game's mechanics; the secret's balance
    "test_onerun_open_claims.py": ("statistical",),  # the open claim's text-table row; a twin refuted on seed 0
    "test_onerun_plan.py": ("cli",),  # planned m reached in about half the runs; `plan --onerun`
    "test_onerun_progress.py": ("cli",),  # the progress lines' rhythm; `run --json` keeping stdout clean
    "test_onerun_premises.py": ("unit", "cli"),  # refusals, read-only records; summary of forged files
    "test_onerun_records.py": ("unit", "report"),  # records of `run`/`summary`; the schema; the one-run page
    "test_onerun_secret.py": ("cli",),  # guessing at chance over seeds; the command line's path
    "test_onerun_sizes.py": ("cli",),  # the API's limits; a config past them exits 2
    "test_onerun_wiring.py": ("statistical", "report"),  # runs of one-run scenarios; the table
    "test_fixed_costs.py": ("unit",),  # the cached exact profile; `plan` of a typo building no design
    "test_plan_inputs.py": ("unit",),  # `plan`/`run` refusing bad input; the planner's API
    "test_plumbing.py": ("unit", "report"),  # the hostile user cases through the CLI and the API
    "test_printable_names.py": ("cli",),  # summary.txt and the PDF; the terminal footer
    "test_readable_results.py": ("cli", "unit"),  # witness sets and columns as read; `run --witness`; progress
    "test_result_sizes.py": ("report",),  # `summary` and `report` of oversized files
    "test_results_schema.py": ("unit", "report"),  # the schema; `summary`/`report` refusing files
    "test_scale.py": ("statistical", "unit"),  # resume after SIGKILL through the CLI; Dask, bench
    "test_streaming.py": ("unit", "cli"),  # laws at 1e7 draws; counting, the planner
    "test_suite_confidence.py": ("statistical", "cli"),  # the tightest claim over seeds; `run --suite`'s confidence
    "test_sweep.py": ("cli",),  # exact loss decay; `sweep` writing its JSON
    "test_vector_mechanisms.py": ("unit",),  # parameter checks; a broken SVT caught
    "test_verdicts.py": ("report",),  # exit codes; the default run's records
    "test_voice.py": ("report", "statistical"),  # words on every surface, the PDF's included
    "test_float_search.py": ("cli", "unit"),  # --search floats; the generators and the white-box screen
    "test_zcdp_audit.py": ("cli", "unit"),  # --rho/--rdp and config claims; the mechanism's claim
}
