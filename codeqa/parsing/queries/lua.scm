; Lua: definitions, references and imports in the shared capture vocabulary.
; A capitalised table bound at the top (`local RateLimiter = {}`) is a class by convention;
; `function RateLimiter.new()` and `function RateLimiter:take()` are its methods.

(chunk
  [(variable_declaration
     (assignment_statement
       (variable_list
         name: (identifier) @name.definition.class)
       (expression_list
         value: (table_constructor))))
   (assignment_statement
     (variable_list
       name: (identifier) @name.definition.class)
     (expression_list
       value: (table_constructor)))] @definition.class
  (#match? @name.definition.class "^[A-Z]"))

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(function_declaration
  name: (dot_index_expression
    table: (_) @scope.definition.method
    field: (identifier) @name.definition.method)) @definition.method

(function_declaration
  name: (method_index_expression
    table: (_) @scope.definition.method
    method: (identifier) @name.definition.method)) @definition.method

; M.f = function () end
(assignment_statement
  (variable_list
    name: (dot_index_expression
      table: (_) @scope.definition.method
      field: (identifier) @name.definition.method))
  (expression_list
    value: (function_definition))) @definition.method

; local f = function () end
(variable_declaration
  (assignment_statement
    (variable_list
      name: (identifier) @name.definition.function)
    (expression_list
      value: (function_definition)))) @definition.function

; Calls: f(), M.f(), obj:m().
(function_call
  name: (identifier) @name.reference.call)

(function_call
  name: (dot_index_expression
    table: (_) @qualifier.reference.call
    field: (identifier) @name.reference.call))

(function_call
  name: (method_index_expression
    table: (_) @qualifier.reference.call
    method: (identifier) @name.reference.call))

; Imports: require("billing.rates"), require "x".
(function_call
  name: (identifier) @_require
  arguments: (arguments
    .
    (string
      content: (string_content) @module.import))
  (#eq? @_require "require"))
