"""Every threshold the diagnosis checks use, in one place.

The checks favour precision over recall: a healthy run (a noisy decreasing loss, a loss that
plateaus, warmup bumps, learning-rate restarts) must yield no finding at all, so each limit
below sits well outside what such runs show. Pass your own :class:`Thresholds` (e.g.
``dataclasses.replace(DEFAULT_THRESHOLDS, lr_max=2.0)``) to ``diagnose_histories``,
``diagnose_run`` or ``online_check`` to move one.

Curve levels are never read from single points: "initial", "final" and "best" levels are
medians over a window of ``window_fraction`` of the points (at least ``window_min_points``),
so one noisy mini-batch cannot raise or clear a finding.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Limits of the checks; every field is documented where it is declared."""

    # -- curve windows -------------------------------------------------------------------
    #: Share of a curve's points that makes one window (initial / final / smoothing level).
    window_fraction: float = 0.1
    #: Fewest points in a window.
    window_min_points: int = 3
    #: Fewest points a curve needs before its trend is judged (divergence, slow convergence).
    min_points_trend: int = 10
    #: Fewest points a curve needs before oscillation is judged.
    min_points_oscillation: int = 20

    # -- loss_runaway --------------------------------------------------------------------
    #: A curve whose level moved away from the best level it reached, in the direction its
    #: goal calls worse, by this many times its own scale has run away (on top of NaN and
    #: +/-Inf, which always count). The scale is the largest of the magnitudes of the initial
    #: and best levels, the improvement achieved and the spread of the first window.
    runaway_factor: float = 100.0
    #: Floor of that scale (a curve that starts flat at exactly 0).
    runaway_floor: float = 1e-3

    # -- divergence ----------------------------------------------------------------------
    #: The final level must sit above the best level by at least this share of the
    #: improvement achieved (initial level - best level) ...
    divergence_giveback: float = 0.5
    #: ... and by at least this share of the best level's magnitude.
    divergence_rel_best: float = 1.0
    #: The larger of those two must be at least this many times the curve's noise (1.4826 x
    #: the median absolute second difference / sqrt(6): a standard deviation for Gaussian
    #: noise, not raised by a steady trend), so a noisy curve hovering near zero, which has learned
    #: nothing its noise could not give back, is not read as climbing back.
    divergence_noise: float = 5.0

    # -- slow_convergence ----------------------------------------------------------------
    #: The training loss improved by less than this share of its initial level.
    slow_min_improvement: float = 0.05

    # -- oscillation ---------------------------------------------------------------------
    #: In the second half of the run, the inter-quartile range of the loss must reach this
    #: share of the improvement achieved so far (initial level - second-half median) ...
    oscillation_iqr_vs_improvement: float = 0.5
    #: ... and this share of the second-half median level itself ...
    oscillation_iqr_vs_level: float = 0.25
    #: ... and the direction of the curve must flip on at least this share of its steps.
    oscillation_min_sign_changes: float = 0.4

    # -- zero_train_loss -----------------------------------------------------------------
    #: The final training-loss level is at most this (absolute) value.
    zero_loss_eps: float = 1e-8

    # -- overfitting ---------------------------------------------------------------------
    #: Training accuracy minus validation accuracy (on a 0-1 scale) of at least this.
    overfit_acc_gap: float = 0.15
    #: Validation loss above its best by at least this share of the best (while the training
    #: loss kept falling by at least ``overfit_train_still_falling`` of its level).
    overfit_val_rise: float = 0.25
    #: Relative fall of the training loss after the validation loss's best epoch.
    overfit_train_still_falling: float = 0.1
    #: Fewest validation points before a rise of the validation loss is judged.
    overfit_min_val_points: int = 5
    #: Final validation loss at least this many times the final training loss ...
    overfit_loss_ratio: float = 3.0
    #: ... and above it by at least this share of the training loss's improvement.
    overfit_loss_gap_vs_improvement: float = 0.25

    # -- distribution_shift --------------------------------------------------------------
    #: Validation accuracy minus test accuracy (on a 0-1 scale) of at least this.
    shift_acc_gap: float = 0.1
    #: Test loss at least this many times the validation loss (when no accuracies).
    shift_loss_ratio: float = 1.5

    # -- hyperparameter_range ------------------------------------------------------------
    #: Learning rates outside [lr_min, lr_max] (lr_max_adaptive for Adam-like optimizers).
    lr_min: float = 1e-6
    lr_max: float = 1.0
    lr_max_adaptive: float = 0.1
    #: Mixed-precision loss scales outside [loss_scale_min, loss_scale_max] (2**24 is the
    #: largest initial scale MindSpore's DynamicLossScaleManager uses).
    loss_scale_min: float = 1.0
    loss_scale_max: float = 2.0**24
    #: Standard deviations of a random weight initialization outside this range.
    init_std_min: float = 1e-4
    init_std_max: float = 1.0
    #: Batch sizes above this (below 1 is always an error).
    batch_size_max: int = 65536
    #: Weight decay at or above this.
    weight_decay_max: float = 1.0

    # -- undertrained --------------------------------------------------------------------
    #: The last share of a curve's points whose trend is the "recent" rate of improvement.
    undertrained_tail_fraction: float = 0.2
    #: Fewest points in that tail (fewer cannot show a trend apart from noise).
    undertrained_min_tail_points: int = 4
    #: Fewest points a validation curve needs to be judged; with fewer (a 1-3 epoch run) the
    #: training loss is judged instead (it needs ``min_points_trend``).
    undertrained_min_val_points: int = 5
    #: The recent rate is at least this share of the run's average rate of improvement. On an
    #: exponential approach to a plateau it is 0.3 after ~2.2 time constants (about a tenth
    #: of the improvement still ahead), 0.1 after 4 (2 % ahead), 0.6 after 1.
    undertrained_rate_ratio: float = 0.3
    #: ... and the recent slope is at least this many standard errors away from zero
    #: (the noise is read from the tail's residuals around its robust trend line).
    undertrained_min_z: float = 3.0

    # -- too_few_epochs / near_full_batch ------------------------------------------------
    #: Fewer optimizer updates than this in the whole training (epochs x steps per epoch).
    #: A 3-epoch fine-tune of a 2,500-sample set at batch 32 makes ~230.
    min_total_steps: int = 100
    #: A batch size at least this share of the training-set size (two steps per epoch or
    #: fewer at 0.5).
    full_batch_fraction: float = 0.5

    # -- weights_unchanged ---------------------------------------------------------------
    #: Largest recorded ``weight_delta`` (or change of ``weight_norm``) relative to the
    #: weight norm (or absolute when no norm was recorded) below which weights did not move.
    weights_unchanged_rel: float = 1e-9

    # -- gradient_vanishing / gradient_exploding -----------------------------------------
    #: Final gradient-norm level at or below this is vanished, whatever the loss does.
    grad_vanish_abs: float = 1e-8
    #: Final gradient-norm level at or below this share of the initial level is vanished
    #: when the training loss also stalled (kept more than ``grad_vanish_loss_kept``).
    grad_vanish_rel: float = 1e-4
    grad_vanish_loss_kept: float = 0.5
    #: Final gradient-norm level at or above this multiple of the initial level ...
    grad_explode_rel: float = 1e3
    #: ... or any single gradient norm at or above this multiple of the initial level.
    grad_explode_spike: float = 1e5

    # -- data_out_of_range ---------------------------------------------------------------
    #: Values may pass the range the pipeline implies by this share of its width (float
    #: rounding of Rescale/Normalize, a 0-255 source read as 0-256).
    data_range_tolerance: float = 0.01


DEFAULT_THRESHOLDS = Thresholds()
"""The thresholds every check uses unless it is given others."""
