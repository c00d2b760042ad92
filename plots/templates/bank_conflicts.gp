# Plot 5: shared-memory loads + stores (cp.async copies excluded), the bank simulator against
# CUPTI's l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld + _op_st and
# l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld + _op_st.
# dat: one block per (variant, layout) label in `groups` (colour in `colours`, point type in
# `points`): predicted_wavefronts measured_wavefronts (millions), predicted_share measured_share
# (conflicts / wavefronts). lo, hi: wavefront range (millions).
w = 1600; h = 760
load common
set multiplot layout 1,2 title sprintf('%s: shared-memory loads + stores, bank simulator vs CUPTI (cp.async copies excluded)', gpu) font ',15'
set size ratio -1
set key top left box opaque samplen 1 spacing 1.1
ng = words(groups)
see_through(c) = '#30'.c[2:]

set title 'wavefronts (op_ld + op_st)' font ',13'
set logscale xy
set format x '%g'
set format y '%g'
set xrange [lo:hi]
set yrange [lo:hi]
set xlabel 'predicted wavefronts (millions)'
set ylabel 'CUPTI wavefronts (millions)'
plot x with lines lc rgb '#000000' lw 1.5 title 'y = x', \
     1.1*x with lines lc rgb '#777777' dt 2 title '±10%', \
     0.9*x with lines lc rgb '#777777' dt 2 notitle, \
     for [i = 1:ng] dat index (i-1) using 1:2 with points pt int(word(points, i)) ps 1.0 \
       lc rgb see_through(word(colours, i)) notitle, \
     for [i = 1:ng] NaN with points pt int(word(points, i)) ps 1.5 lc rgb word(colours, i) title word(groups, i)

set title 'bank conflicts as a share of the wavefronts (0: conflict-free, 31/32: 32-way)' font ',13'
unset logscale xy
set xrange [-0.03:1]
set yrange [-0.03:1]
set format x '%.1f'
set format y '%.1f'
set xlabel 'predicted conflicts / wavefronts'
set ylabel 'CUPTI conflicts / wavefronts'
unset key
plot x with lines lc rgb '#000000' lw 1.5 notitle, \
     for [i = 1:ng] dat index (i-1) using 3:4 with points pt int(word(points, i)) ps 1.0 \
       lc rgb see_through(word(colours, i)) notitle
unset multiplot
