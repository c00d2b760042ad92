# Plot 4: roofline. dat: one block per variant (label in `variants`, colour in `colours`):
# intensity (FLOP/byte of DRAM) achieved (TFLOP/s).
# Ceilings (bytes/s, FLOP/s): dram, l2, smem, fp32, sfu (sfu: exp rate x FLOPs per exp = sfu_fpe),
# the tensor cores' datasheet rates tf32, bf16, fp16 (0: none; bf16 == fp16 draws one line), and
# top, the highest ceiling, where the slopes stop.
w = 1300; h = 700
load common
set title sprintf('%s: roofline (measured configs at the model''s DRAM intensity, nominal FLOPs / measured time)', gpu)
set logscale xy
set format x '%g'
set format y '%g'
set xrange [xmin : xmax]
set xlabel 'operational intensity (FLOP / DRAM byte)'
set ylabel 'achieved performance (TFLOP/s)'
set key outside right top box samplen 2 spacing 1.1
roof(bw, x) = (bw * x < top ? bw * x / 1e12 : 1/0)
ceiling(f) = (f > 0 ? f / 1e12 : 1/0)
set yrange [*: top / 1e12 * 1.5]
nv = words(variants)
see_through(c) = '#40'.c[2:]
plot roof(dram, x) with lines lc rgb '#000000' lw 2 title sprintf('DRAM %.0f GB/s', dram/1e9), \
     roof(l2, x) with lines lc rgb '#555555' lw 2 dt 2 title sprintf('L2 %.0f GB/s (est.)', l2/1e9), \
     roof(smem, x) with lines lc rgb '#999999' lw 2 dt 4 title sprintf('shared %.0f GB/s', smem/1e9), \
     fp32 / 1e12 with lines lc rgb '#B22222' lw 2 title sprintf('FP32 %.1f TFLOP/s', fp32/1e12), \
     sfu / 1e12 with lines lc rgb '#8B008B' lw 2 dt 2 title sprintf('SFU: exp rate x %.0f FLOP/exp = %.0f TFLOP/s', sfu_fpe, sfu/1e12), \
     ceiling(tf32) with lines lc rgb '#1E6FB2' lw 2 title (tf32 > 0 ? sprintf('tensor TF32 %.0f TFLOP/s', tf32/1e12) : ''), \
     ceiling(bf16) with lines lc rgb '#0B8A5A' lw 2 title (bf16 > 0 ? sprintf(bf16 == fp16 ? 'tensor bf16/fp16 %.0f TFLOP/s' : 'tensor bf16 %.0f TFLOP/s', bf16/1e12) : ''), \
     (fp16 != bf16 ? ceiling(fp16) : 1/0) with lines lc rgb '#6BAF3A' lw 2 dt 2 title (fp16 > 0 && fp16 != bf16 ? sprintf('tensor fp16 %.0f TFLOP/s', fp16/1e12) : ''), \
     for [i = 1:nv] dat index (i-1) using 1:2 with points pt 7 ps 0.8 lc rgb see_through(word(colours, i)) notitle, \
     for [i = 1:nv] NaN with points pt 7 ps 1.4 lc rgb word(colours, i) title word(variants, i)
