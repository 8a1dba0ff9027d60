; Objective-C on top of c_family.scm and c.scm (the grammar extends C's): classes, protocols,
; categories, methods and message sends. `@interface Foo` declares the class, `@implementation
; Foo` holds its methods (an impl, like Swift's extensions); a method is named by its first
; keyword (`initWithPrinterName:` is `initWithPrinterName`).

(class_interface
  .
  (identifier) @name.definition.class) @definition.class

(class_implementation
  .
  (identifier) @name.definition.impl) @definition.impl

(protocol_declaration
  .
  (identifier) @name.definition.interface) @definition.interface

(method_declaration
  (identifier) @name.definition.method) @definition.method

(method_definition
  (identifier) @name.definition.method) @definition.method

; Message sends: [receiver method...], [Foo alloc] (a factory name in the table).
(message_expression
  receiver: (_) @qualifier.reference.call
  method: (identifier) @name.reference.call)

; Type uses: superclasses, parameters, returns.
(class_interface
  superclass: (identifier) @name.reference.type)

(type_name
  (type_identifier) @name.reference.type)

; Imports: #import "x.h", #import <Foundation/Foundation.h>.
(preproc_include
  path: (string_literal
    (string_content) @module.import))

(preproc_include
  path: (system_lib_string) @module.import)
