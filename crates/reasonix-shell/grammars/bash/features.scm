; Features of a bash script, one capture name per feature (see src/lib.rs, `Feature`).
; Each capture marks that the construct occurs at least once anywhere in the tree.
; src/parse.rs reads the same node kinds from its table `KINDS` in one pass over the tree
; (compiling this query cost a fifth of a one-call process); its tests hold the table to this
; file, row by row, over a corpus of scripts.

(pipeline) @pipe
(list) @chain
(command_substitution) @substitution
(process_substitution) @process_substitution
(heredoc_redirect) @heredoc
(herestring_redirect) @herestring
(subshell) @subshell
(compound_statement) @group
(function_definition) @function_def
(if_statement) @conditional
(case_statement) @conditional
(while_statement) @loop
(for_statement) @loop
(c_style_for_statement) @loop
(negated_command) @negation
(variable_assignment) @assignment
(simple_expansion) @variable
(expansion) @variable
(brace_expression) @brace_expansion
(arithmetic_expansion) @arithmetic
(test_command) @test
(comment) @comment
(ERROR) @parse_error
"&" @background
