# Plot 6: the model's per-pipe terms for the best measured config of each workload, each as a
# fraction of the measured time: a table of coloured cells, one row per workload.
# dat: column row value (long format). rows, nrows: row tic list '("t10: ..." 0, ...)' and count;
# cols, ncols: column tic list and count (the pipes, then the model total).
w = 1400; h = 200 + 26 * nrows
load common
set title sprintf('%s: model time per pipe / measured time, best measured config of each workload', gpu) font ',15'
set xrange [-0.5 : ncols - 0.5]
set yrange [nrows - 0.5 : -0.5]
eval 'set ytics '.rows
set ytics font ',10' scale 0
eval 'set xtics '.cols
set xtics scale 0
set grid noxtics noytics
set cbrange [0 : 1.5]
set cblabel 'term / measured time (1 = the measured time; above 1.5 drawn as 1.5)'
# white to blue up to the measured time, then a break to yellow-red: above 1 the term alone is
# longer than the measurement
set palette defined (0 '#ffffff', 0.5 '#c6dbef', 1.0 '#2171b5', 1.0 '#fee090', 1.25 '#fdae61', 1.5 '#d7191c')
set style fill solid 1.0 border lc rgb 'white'
set lmargin 52
# the model total is not one more pipe: set it apart
set arrow from ncols - 1.5, graph 0 to ncols - 1.5, graph 1 nohead lc rgb '#000000' lw 3 front
unset key
clip(v) = v > 1.5 ? 1.5 : v
plot dat using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):(clip($3)) with boxxyerror fc palette notitle, \
     dat using 1:2:(sprintf('%.2f', $3)) with labels font ',10' notitle
